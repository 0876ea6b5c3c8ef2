// Man pages and shell completion (completion.h) generated from a CLI11
// command tree, so the documentation of lbctl and lbdp is their command
// tables and cannot drift from them. Pure functions of the tree;
// thread-compatible.
//
// AddDocFlags gives a program hidden flags that print them (--generate-man,
// --generate-{bash,zsh,fish}-completion); the build runs them to make the
// installed man page and completion files.
#ifndef BALLAST_TOOLS_CLI_DOC_CLI_DOC_H_
#define BALLAST_TOOLS_CLI_DOC_CLI_DOC_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tools/cli_doc/completion.h"

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

// Escapes text for roff: backslashes, hyphens in options, a leading dot
// or quote.
std::string RoffEscape(const std::string& text);

// Adds the hidden --generate-man and --generate-{bash,zsh,fish}-completion
// flags to `app`; each prints to `out` and ends parsing with CLI::Success. `app`
// must outlive its parse.
void AddDocFlags(CLI::App& app, ManInfo info, std::FILE* out = stdout);

}  // namespace ballast::cli_doc

#endif  // BALLAST_TOOLS_CLI_DOC_CLI_DOC_H_
