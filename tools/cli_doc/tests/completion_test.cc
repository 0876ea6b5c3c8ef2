// Completion scripts (completion.h), run in the real shells: bash (the
// function with COMP_WORDS set), zsh (the function with `words` and
// CURRENT set, compadd and _files recording what would be offered) and fish
// (`complete -C`, fish's own completion engine).
#include "tools/cli_doc/completion.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tools/cli_doc/cli_doc.h"

namespace ballast::cli_doc {
namespace {

struct Tree {
  CLI::App app{"tool: does things", "tool"};
  std::string socket = "/run/x.sock", output, vip, backend, mode, file, ownership;
  bool json = false;
  int weight = 1;
  Tree() {
    app.add_option("--socket", socket, "the socket")->type_name("PATH");
    app.add_flag("--json", json, "JSON output");
    app.add_option("-o,--output", output, "format")->check(CLI::IsMember({"table", "json"}));
    app.add_option("--secret", output, "not shown")->group("");
    CLI::App* vipc = app.add_subcommand("vip", "manage VIPs");
    CLI::App* add = vipc->add_subcommand("add", "add a VIP");
    add->add_option("vip", vip, "the VIP")->required();
    add->add_option("--backend", backend, "a backend, ADDR[,weight=N]");
    add->add_option("--mode", mode, "how it's sent")->type_name("{encap,gue}");
    CLI::App* own = vipc->add_subcommand("own", "who forwards it");
    own->add_option("VIP", vip, "the VIP")->required();
    own->add_option("MODE", ownership, "the mode")->type_name("{active-standby,all}");
    vipc->add_subcommand("del", "delete a VIP");
    CLI::App* status = app.add_subcommand("status", "show status");
    status->add_option("--weight", weight, "-w is not it");
    status->add_option("-f,--file", file, "a file")->type_name("FILE");
    AddDocFlags(app, ManInfo{"tool", 1, "1", "a tool", "", {}});
  }
};

std::string Run(const std::string& cmd) {
  std::FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = pclose(p);
  INFO(cmd << " said: " << out);
  REQUIRE(WIFEXITED(rc));
  REQUIRE(WEXITSTATUS(rc) == 0);
  return out;
}

struct Script {
  explicit Script(const std::string& text) {
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(path) << text;
  }
  ~Script() { unlink(path); }
  char path[32] = "/tmp/cli-doc-compl-XXXXXX";
};

// The words offered, sorted, space-separated.
std::string Sorted(const std::string& lines_or_words) {
  std::vector<std::string> w;
  std::istringstream in(lines_or_words);
  for (std::string x; in >> x;) w.push_back(x);
  std::sort(w.begin(), w.end());
  std::string out;
  for (const std::string& x : w) out += (out.empty() ? "" : " ") + x;
  return out;
}

// bash: COMP_WORDS are `words` (a bash array literal, the last one being
// completed).
std::string Bash(const CLI::App& app, const std::string& words) {
  Script s(BashCompletion(app, "tool") + "\nCOMP_WORDS=(" + words + ")\n" +
           "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n_ballast_tool\n" +
           "printf '%s\\n' \"${COMPREPLY[@]}\"\n");
  return Sorted(Run(std::string("cd /tmp && bash ") + s.path));
}

// zsh: compadd records the candidates that match the word being completed
// (zsh's completion system filters by it), _files says files were asked for.
std::string Zsh(const CLI::App& app, const std::string& words) {
  const std::string harness = R"zsh(
compdef() { :; }
typeset -ga offered
compadd() {
  while (($#)); do
    case $1 in
      --) shift; break ;;
      -d) shift 2 ;;
      -*) shift ;;
      *) break ;;
    esac
  done
  local w
  for w in "$@"; do [[ $w == ${words[CURRENT]}* ]] && offered+=("$w"); done
}
_files() { offered+=("@files"); }
)zsh";
  Script s(harness + ZshCompletion(app, "tool") + "\nwords=(" + words + ")\nCURRENT=${#words}\n" +
           "_ballast_tool\nprint -l -- $offered\n");
  return Sorted(Run(std::string("zsh -f ") + s.path));
}

// fish: `complete -C LINE` lists what fish would offer, a word and a tab
// and its description per line.
std::string Fish(const CLI::App& app, const std::string& line) {
  Script s(FishCompletion(app, "tool") + "\ncomplete -C '" + line +
           "' | string replace -r '\\t.*' ''\ntrue\n");
  return Sorted(Run(std::string("cd /tmp && fish --no-config ") + s.path));
}

TEST_CASE("ValuesOf: choices from the type name's braces, files from FILE, PATH, DIR") {
  Tree t;
  CHECK(ValuesOf(*t.app.get_option("-o")).choices == std::vector<std::string>{"table", "json"});
  CHECK(ValuesOf(*t.app.get_option("--socket")).files);
  CHECK(ValuesOf(*t.app.get_option("--json")) == ValueCompletion{});
  const CLI::App* own = t.app.get_subcommand("vip")->get_subcommand("own");
  CHECK(ValuesOf(*own->get_option("MODE")).choices ==
        std::vector<std::string>{"active-standby", "all"});
}

TEST_CASE("Bash completion: commands, options of the path and the global ones, values") {
  Tree t;
  const std::string s = BashCompletion(t.app, "tool");
  CHECK(s.find("complete -F _ballast_tool tool") != std::string::npos);
  CHECK(Bash(t.app, "tool ''") == "status vip");
  CHECK(Bash(t.app, "tool v") == "vip");
  CHECK(Bash(t.app, "tool vip ''") == "add del own");
  CHECK(Bash(t.app, "tool --json vip a") == "add");
  CHECK(Bash(t.app, "tool vip add --b") == "--backend");
  // Global options after the command, hidden ones never.
  CHECK(Bash(t.app, "tool status --") == "--file --help --json --output --socket --weight");
  CHECK(Bash(t.app, "tool --s") == "--socket");
  CHECK(Bash(t.app, "tool --g").empty());
  // Values: an option's choices (here and after the command), a positional's.
  CHECK(Bash(t.app, "tool -o ''") == "json table");
  CHECK(Bash(t.app, "tool status --output j") == "json");
  CHECK(Bash(t.app, "tool vip add X --mode ''") == "encap gue");
  CHECK(Bash(t.app, "tool vip own 198.18.0.10:80/tcp ''") == "active-standby all");
  CHECK(Bash(t.app, "tool vip own ''").empty());
  // A value is not taken for a command: `--socket vip` is the socket.
  CHECK(Bash(t.app, "tool status --weight ''").empty());
  CHECK(Bash(t.app, "tool -o json vip ''") == "add del own");
  CHECK(Bash(t.app, "tool --socket vip ''") == "status vip");
  // Files for FILE and PATH values.
  CHECK(Bash(t.app, "tool --socket /etc/host") == Sorted(Run("ls -d /etc/host* 2>/dev/null")));
}

TEST_CASE("zsh completion: the same words, with files through _files") {
  Tree t;
  const std::string s = ZshCompletion(t.app, "tool");
  CHECK(s.rfind("#compdef tool\n", 0) == 0);
  CHECK(Zsh(t.app, "tool ''") == "status vip");
  CHECK(Zsh(t.app, "tool vip ''") == "add del own");
  CHECK(Zsh(t.app, "tool --json vip a") == "add");
  CHECK(Zsh(t.app, "tool status --") == "--file --help --json --output --socket --weight");
  CHECK(Zsh(t.app, "tool -o ''") == "json table");
  CHECK(Zsh(t.app, "tool vip add X --mode g") == "gue");
  CHECK(Zsh(t.app, "tool vip own X ''") == "active-standby all");
  CHECK(Zsh(t.app, "tool --socket vip ''") == "status vip");
  CHECK(Zsh(t.app, "tool status -f ''") == "@files");
}

TEST_CASE("fish completion: fish's own engine offers the same words") {
  Tree t;
  CHECK(Fish(t.app, "tool ") == "status vip");
  CHECK(Fish(t.app, "tool vip ") == "add del own");
  CHECK(Fish(t.app, "tool --json vip a") == "add");
  CHECK(Fish(t.app, "tool vip add --b") == "--backend");
  CHECK(Fish(t.app, "tool status --") == "--file --help --json --output --socket --weight");
  CHECK(Fish(t.app, "tool -o ") == "json table");
  CHECK(Fish(t.app, "tool status --output j") == "json");
  CHECK(Fish(t.app, "tool vip add X --mode ") == "encap gue");
  CHECK(Fish(t.app, "tool vip own X ") == "active-standby all");
  CHECK(Fish(t.app, "tool --socket vip ") == "status vip");
  CHECK(Fish(t.app, "tool --g").empty());
  // Files for a FILE value.
  CHECK(Fish(t.app, "tool status -f /etc/host") == Sorted(Run("ls -d /etc/host* 2>/dev/null")));
}

}  // namespace
}  // namespace ballast::cli_doc
