#include "tools/cli_doc/cli_doc.h"

#include <sys/wait.h>
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

// Runs the completion script in bash for the words typed so far (the last
// one being completed) and returns COMPREPLY joined by spaces.
std::string Complete(const std::string& script, const std::string& words) {
  char path[] = "/tmp/cli-doc-test-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  {
    std::ofstream f(path);
    f << script << "\nCOMP_WORDS=(" << words << ")\n"
      << "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
      << "_ballast_tool\n"
      << "echo \"${COMPREPLY[*]}\"\n";
  }
  std::string cmd = std::string("bash ") + path;
  std::FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = pclose(p);
  unlink(path);
  REQUIRE(WIFEXITED(rc));
  REQUIRE(WEXITSTATUS(rc) == 0);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST_CASE("Bash completion: commands at each level, options of the path and the global ones") {
  Tree t;
  const std::string s = BashCompletion(t.app, "tool");
  CHECK(s.find("complete -F _ballast_tool tool") != std::string::npos);
  CHECK(Complete(s, "tool ''") == "status vip");
  CHECK(Complete(s, "tool v") == "vip");
  CHECK(Complete(s, "tool vip ''") == "add del");
  CHECK(Complete(s, "tool --json vip a") == "add");
  CHECK(Complete(s, "tool vip add --b") == "--backend");
  // Global options after the command, hidden ones never.
  CHECK(Complete(s, "tool status --") == "--weight --help --json --output --socket");
  CHECK(Complete(s, "tool --s") == "--socket");
  // A value is not completed as a command: `--socket vip` is the socket.
  CHECK(Complete(s, "tool --socket ''").empty());
  CHECK(Complete(s, "tool --socket vip ''") == "status vip");
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
  // Neither appears in the page or the completion.
  CHECK(ManPage(t.app, ManInfo{"tool", 1, "1", "", "", {}}).find("\\-\\-generate") ==
        std::string::npos);
  CHECK(Complete(BashCompletion(t.app, "tool"), "tool --g").empty());
}

}  // namespace
}  // namespace ballast::cli_doc
