// Shell completion scripts (bash, zsh, fish) generated from a CLI11 command
// tree, so that completion is the command table and cannot drift from it.
// Pure functions of the tree; thread-compatible.
//
// Each script completes the commands at each level, the options of the
// command path so far and the global ones, and values: an option's or a
// positional's value from its type name ("{table,json}", as CLI::IsMember
// or an explicit type_name writes it, offers those words; FILE, PATH or
// DIR offers file names). Values of options are found wherever the option
// is typed, so `--socket vip` is never taken for the command `vip`.
#ifndef BALLAST_TOOLS_CLI_DOC_COMPLETION_H_
#define BALLAST_TOOLS_CLI_DOC_COMPLETION_H_

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ballast::cli_doc {

// What a value completes to.
struct ValueCompletion {
  std::vector<std::string> choices;  // these words
  bool files = false;                // file names
  bool operator==(const ValueCompletion&) const = default;
};

// An option's or positional's value completion, from its type name: the
// words of its last "{a,b,...}", or files for FILE, PATH, DIR (alone or
// before a ':'); nothing otherwise.
ValueCompletion ValuesOf(const CLI::Option& o);

// One command path of the tree ("" for the program itself, "vip add").
struct CompletionLevel {
  struct Opt {
    std::vector<std::string> names;  // "--output", "-o"
    std::string help;
    bool takes_value = false;
    ValueCompletion values;
  };
  std::string path;
  std::vector<std::pair<std::string, std::string>> subs;  // name, description
  std::vector<Opt> opts;                     // named options, --help left out below the top
  std::vector<ValueCompletion> positionals;  // in order
};

// Every visible level of `app`, the program itself first, then depth first.
std::vector<CompletionLevel> CompletionLevels(const CLI::App& app);

// A bash completion script for `name` (complete -F _ballast_NAME NAME).
std::string BashCompletion(const CLI::App& app, const std::string& name);

// A zsh completion function for `name`, to install as `_NAME` in $fpath
// (#compdef NAME); sourcing it registers it with compdef.
std::string ZshCompletion(const CLI::App& app, const std::string& name);

// fish completions for `name` (complete -c NAME ...), to install as
// NAME.fish in fish's vendor_completions.d.
std::string FishCompletion(const CLI::App& app, const std::string& name);

}  // namespace ballast::cli_doc

#endif  // BALLAST_TOOLS_CLI_DOC_COMPLETION_H_
