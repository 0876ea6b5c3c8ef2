// lbctl: the operator's command line for lbagent. See docs/lbctl.md.
#include <cstdio>

#include "tools/lbctl/commands.h"

int main(int argc, char** argv) { return ballast::lbctl::RunLbctl(argc, argv, stdout, stderr); }
