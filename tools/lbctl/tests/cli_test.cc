// lbctl's command line itself (run.cc, suggest.h): unknown commands and
// options named with the closest known one, `help` and `version`, and every
// parse error said as "lbctl: ..." with exit 2. None of these reaches an
// agent.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "agent/api/tests/test_util.h"
#include "tools/lbctl/suggest.h"

namespace ballast::lbctl {
namespace {

using api::testing::LbctlResult;

LbctlResult Lbctl(const std::vector<std::string>& args) {
  // A socket nobody serves: a command that got as far as calling would say so.
  std::vector<std::string> all = {"--socket", "/nonexistent/lbagent.sock"};
  all.insert(all.end(), args.begin(), args.end());
  LbctlResult r = api::testing::RunLbctlCaptured(all);
  UNSCOPED_INFO("lbctl exit " << r.exit_code << "\nstdout:\n" << r.out << "stderr:\n" << r.err);
  return r;
}

TEST_CASE("EditDistance counts a swap of neighbours once", "[lbctl][suggest]") {
  CHECK(EditDistance("stauts", "status") == 1);
  CHECK(EditDistance("lst", "list") == 1);
  CHECK(EditDistance("wieght", "weight") == 1);
  CHECK(EditDistance("", "vip") == 3);
  CHECK(EditDistance("drain", "drain") == 0);
  CHECK(EditDistance("add", "del") == 3);
}

TEST_CASE("Suggest: the closest words, prefixes when nothing is close", "[lbctl][suggest]") {
  const std::vector<std::string> verbs = {"add", "del", "list", "set-ownership", "relearn"};
  CHECK(Suggest("lst", verbs) == std::vector<std::string>{"list"});
  CHECK(Suggest("ad", verbs) == std::vector<std::string>{"add"});
  CHECK(Suggest("set", verbs) == std::vector<std::string>{"set-ownership"});
  CHECK(Suggest("frobnicate", verbs).empty());
  // Short words are not "close" to everything of their length.
  CHECK(Suggest("x", {"o", "w"}).empty());
  CHECK(Suggest("de", {"del", "dev"}) == std::vector<std::string>{"del", "dev"});
  CHECK(DidYouMean({"status"}) == "; did you mean \"status\"?");
  CHECK(DidYouMean({"del", "dev"}) == "; did you mean one of \"del\", \"dev\"?");
  CHECK(DidYouMean({}).empty());
}

TEST_CASE("An unknown command is named, with the closest one", "[lbctl][cli]") {
  LbctlResult r = Lbctl({"stauts"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "lbctl: unknown command \"stauts\"; did you mean \"status\"?\n"
        "Run \"lbctl help\" for the commands.\n");
  r = Lbctl({"vip", "lst"});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "lbctl: unknown command \"vip lst\"; did you mean \"vip list\"?\n"
        "Run \"lbctl help vip\" for its usage.\n");
  r = Lbctl({"--json", "backend", "drian", "198.18.0.10:80/tcp", "198.18.1.1"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("lbctl: unknown command \"backend drian\"; did you mean "
                                      "\"backend drain\"?\n"));
  r = Lbctl({"frobnicate"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lbctl: unknown command \"frobnicate\"\nRun \"lbctl help\" for the commands.\n");
}

TEST_CASE("An unknown option is named, with the closest one of the command", "[lbctl][cli]") {
  LbctlResult r = Lbctl({"backend", "add", "198.18.0.10:80/tcp", "198.18.1.1", "--wieght", "5"});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "lbctl: unknown option \"--wieght\" for \"backend add\"; did you mean \"--weight\"?\n"
        "Run \"lbctl help backend add\" for its usage.\n");
  // --name=value and a global option's typo.
  r = Lbctl({"status", "--intreval=1s"});
  CHECK_THAT(r.err, Catch::StartsWith("lbctl: unknown option \"--intreval\" for \"status\"; did "
                                      "you mean \"--interval\"?\n"));
  r = Lbctl({"--jsno", "status"});
  CHECK_THAT(r.err, Catch::Contains("did you mean \"--json\"?"));
  r = Lbctl({"status", "-x"});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "lbctl: unknown option \"-x\" for \"status\"\nRun \"lbctl help status\" for its usage.\n");
}

TEST_CASE("Every message about a bad command line starts with lbctl: and exits 2", "[lbctl][cli]") {
  const std::vector<std::vector<std::string>> bad = {
      {"-o", "yaml", "status"},
      {"status", "--frames", "x"},
      {"status", "198.18.0.10:80/tcp", "extra"},
      {"backend", "add", "--weight", "5", "198.18.0.10:80/tcp"},
      {"vip"},
      {"teardown", "--yes", "--yes=maybe"},
      {"help", "vip", "lst"},
  };
  for (const std::vector<std::string>& args : bad) {
    LbctlResult r = Lbctl(args);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("lbctl: "));
    CHECK_THAT(r.err, Catch::Contains("Run \"lbctl help"));
    CHECK_THAT(r.err, !Catch::Contains("Run with --help"));
  }
  CHECK(Lbctl({"vip"}).err ==
        "lbctl: \"vip\" needs a command: add, del, list, set-ownership, relearn, quic-config, "
        "quic-rotate, quic-retire\n"
        "Run \"lbctl help vip\" for its usage.\n");
  CHECK(Lbctl({"-o", "yaml", "status"}).err ==
        "lbctl: --output: yaml not in {table,json}\nRun \"lbctl help status\" for its usage.\n");
  // Without any argument: the usage, and exit 2.
  LbctlResult r = api::testing::RunLbctlCaptured({});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("lbctl: a command is required\n"));
  CHECK_THAT(r.err, Catch::Contains("Usage: lbctl"));
}

TEST_CASE("help and version are commands", "[lbctl][cli]") {
  LbctlResult r = Lbctl({"help"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Usage: lbctl [OPTIONS] SUBCOMMAND"));
  CHECK_THAT(r.out, Catch::Contains("digest"));
  CHECK(r.err.empty());
  r = Lbctl({"help", "vip"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Usage: lbctl vip [OPTIONS] SUBCOMMAND"));
  CHECK_THAT(r.out, Catch::Contains("set-ownership"));
  r = Lbctl({"help", "backend", "drain"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Usage: lbctl backend drain [OPTIONS] VIP BACKEND"));
  CHECK_THAT(r.out, Catch::Contains("--deadline DURATION"));
  // The same text as --help.
  CHECK(Lbctl({"backend", "drain", "--help"}).out == r.out);
  r = Lbctl({"help", "stauts"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err,
             Catch::StartsWith("lbctl: unknown command \"stauts\"; did you mean \"status\"?"));
  r = Lbctl({"version"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Matches("lbctl [0-9]+\\.[0-9]+\\.[0-9]+\n"));
  CHECK(Lbctl({"--version"}).out == r.out);
}

}  // namespace
}  // namespace ballast::lbctl
