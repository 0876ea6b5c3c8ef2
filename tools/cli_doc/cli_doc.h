// Man pages and bash completion generated from a CLI11 command tree, so the
// documentation of lbctl and lbdp is their command tables and cannot drift
// from them. Pure functions of the tree; thread-compatible.
//
// AddDocFlags gives a program two hidden flags that print them
// (--generate-man, --generate-bash-completion); the build runs them to make
// the installed man page and completion file.
#ifndef BALLAST_TOOLS_CLI_DOC_CLI_DOC_H_
#define BALLAST_TOOLS_CLI_DOC_CLI_DOC_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace ballast::cli_doc {

struct ManInfo {
  std::string name;     // "lbctl"
  int section = 1;      // 1: user commands, 8: administration
  std::string version;  // "0.1.0"
  std::string summary;  // NAME line: "operate ballast's lbagent"
  // Plain text (no roff): DESCRIPTION paragraphs, then extra sections
  // (title, paragraphs separated by blank lines) such as ENVIRONMENT,
  // EXIT STATUS, FILES, SEE ALSO. A paragraph line starting with "  "
  // is shown as-is (examples).
  std::string description;
  std::vector<std::pair<std::string, std::string>> sections;
};

// The man page (roff, man(7) macros) of `app` and its subcommands: the
// global options, then every command path ("vip add") with its help and
// options. Hidden options (empty group) are left out.
std::string ManPage(const CLI::App& app, const ManInfo& info);

// A bash completion script for `name`: subcommands at each level, the
// options of the command path so far and the global ones; an option that
// takes a value is not completed past.
std::string BashCompletion(const CLI::App& app, const std::string& name);

// Escapes text for roff: backslashes, hyphens in options, a leading dot
// or quote.
std::string RoffEscape(const std::string& text);

// Adds the hidden --generate-man and --generate-bash-completion flags to
// `app`; each prints to `out` and ends parsing with CLI::Success. `app`
// must outlive its parse.
void AddDocFlags(CLI::App& app, ManInfo info, std::FILE* out = stdout);

}  // namespace ballast::cli_doc

#endif  // BALLAST_TOOLS_CLI_DOC_CLI_DOC_H_
