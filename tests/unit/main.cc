// The one Catch2 main for unit_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
