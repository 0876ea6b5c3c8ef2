// api_tests: the admin API server, its access rules, and lbctl.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
