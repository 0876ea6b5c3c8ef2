#include "tools/cli_doc/cli_doc.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace ballast::cli_doc {
namespace {

struct Tree {
  CLI::App app{"tool: does things", "tool"};
  std::string socket = "/run/x.sock", output, vip, backend;
  bool json = false;
  int weight = 1;
  Tree() {
    app.add_option("--socket", socket, "the socket")->capture_default_str();
    app.add_flag("--json", json, "JSON output");
    app.add_option("-o,--output", output, "format");
    app.add_option("--secret", output, "not shown")->group("");
    CLI::App* vipc = app.add_subcommand("vip", "manage VIPs");
    CLI::App* add = vipc->add_subcommand("add", "add a VIP");
    add->add_option("vip", vip, "the VIP")->required();
    add->add_option("--backend", backend, "a backend, ADDR[,weight=N]");
    vipc->add_subcommand("del", "delete a VIP");
    CLI::App* status = app.add_subcommand("status", "show status");
    status->add_option("--weight", weight, "-w is not it");
  }
};

TEST_CASE("The man page lists the global options, every command and its options") {
  Tree t;
  ManInfo info{"tool", 8, "1.2.3", "a tool", "It does things.\n\n  tool vip add X", {}};
  info.sections = {{"Exit status", "0 ok."}, {"See also", "other(1)"}};
  const std::string m = ManPage(t.app, info);
  CHECK(m.find(".TH TOOL 8 \"\" \"ballast 1.2.3\"") != std::string::npos);
  CHECK(m.find(".SH NAME\ntool \\- a tool") != std::string::npos);
  CHECK(m.find(".SH GLOBAL OPTIONS") != std::string::npos);
  CHECK(m.find("\\-\\-socket TEXT") != std::string::npos);
  CHECK(m.find("(default: /run/x.sock)") != std::string::npos);
  CHECK(m.find("\\-o, \\-\\-output TEXT") != std::string::npos);
  CHECK(m.find(".SS \"tool vip add VIP\"") != std::string::npos);
  CHECK(m.find("\\-\\-backend TEXT") != std::string::npos);
  CHECK(m.find(".SS \"tool vip del\"") != std::string::npos);
  CHECK(m.find(".SS \"tool status\"") != std::string::npos);
  CHECK(m.find(".SH EXIT STATUS\n0 ok.") != std::string::npos);
  CHECK(m.find(".RS\n.nf\ntool vip add X\n.fi\n.RE") != std::string::npos);
  // Hidden options and the help flag are left out.
  CHECK(m.find("secret") == std::string::npos);
  CHECK(m.find("\\-\\-help") == std::string::npos);
}

TEST_CASE("Roff escaping: backslashes, hyphens and lines that would be requests") {
  CHECK(RoffEscape("a-b") == "a\\-b");
  CHECK(RoffEscape("c:\\x") == "c:\\ex");
  CHECK(RoffEscape(".TH boom\n'quote") == "\\&.TH boom\n\\&'quote");
  CHECK(RoffEscape("mid.dot") == "mid.dot");
}

TEST_CASE("The hidden flags print the page and end parsing with success") {
  Tree t;
  char path[] = "/tmp/cli-doc-flag-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::FILE* f = fdopen(fd, "w+");
  AddDocFlags(t.app, ManInfo{"tool", 1, "1", "a tool", "", {}}, f);
  int code = -1;
  try {
    t.app.parse(std::string("--generate-man"), false);
  } catch (const CLI::ParseError& e) {
    code = e.get_exit_code();
  }
  CHECK(code == 0);
  std::fflush(f);
  std::rewind(f);
  char buf[64] = {};
  REQUIRE(std::fgets(buf, sizeof buf, f) != nullptr);
  CHECK(std::string(buf).rfind(".\\\" Generated from tool", 0) == 0);
  std::fclose(f);
  unlink(path);
  // None appears in the page (nor in the completion: completion_test.cc).
  CHECK(ManPage(t.app, ManInfo{"tool", 1, "1", "", "", {}}).find("\\-\\-generate") ==
        std::string::npos);
}

}  // namespace
}  // namespace ballast::cli_doc
