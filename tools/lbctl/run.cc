// RunLbctl: the command tree (global options, the command table, `help`
// and `version`), parsing, and what lbctl says when the command line is
// wrong: an unknown command or option is named with the closest known one
// (suggest.h), every message starts with "lbctl: " and says where the usage
// is.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/lbctl/commands.h"
#include "tools/lbctl/duration.h"
#include "tools/lbctl/exit_codes.h"
#include "tools/lbctl/man_info.h"
#include "tools/lbctl/suggest.h"

namespace ballast::lbctl {
namespace {

void Print(std::FILE* out, absl::string_view text) {
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

// What a noun manages; its verbs come from the command table.
constexpr struct {
  absl::string_view noun;
  absl::string_view help;
} kNouns[] = {
    {"vip", "manage VIPs"},
    {"backend", "manage backends"},
    {"config", "declarative config"},
    {"flow-hash", "the cluster's secret flow hash seed"},
};

std::string NounHelp(absl::string_view noun) {
  std::vector<std::string> verbs;
  for (const Command& c : Commands()) {
    if (c.noun == noun) verbs.emplace_back(c.verb);
  }
  for (const auto& n : kNouns) {
    if (n.noun == noun) return absl::StrCat(n.help, ": ", absl::StrJoin(verbs, ", "));
  }
  return absl::StrJoin(verbs, ", ");
}

std::vector<const CLI::App*> Visible(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); });
}

// "vip add" for the app of `lbctl vip add`, "" for lbctl itself.
std::string PathOf(const CLI::App* a) {
  std::vector<std::string> names;
  for (; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) {
    names.insert(names.begin(), a->get_name());
  }
  return absl::StrJoin(names, " ");
}

std::string Quoted(const std::string& path, const std::string& word) {
  return absl::StrCat("\"", path.empty() ? "" : path + " ", word, "\"");
}

std::string UsageHint(const CLI::App* a) {
  const std::string path = PathOf(a);
  return absl::StrCat("Run \"lbctl help", path.empty() ? "" : " " + path, "\" for ",
                      path.empty() ? "the commands" : "its usage", ".\n");
}

std::string UnknownCommand(const CLI::App* at, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* sub : Visible(*at)) names.push_back(sub->get_name());
  std::vector<std::string> hints = Suggest(word, names);
  const std::string path = PathOf(at);
  for (std::string& h : hints) h = path.empty() ? h : path + " " + h;
  return absl::StrCat("lbctl: unknown command ", Quoted(path, word), DidYouMean(hints), "\n",
                      UsageHint(at));
}

// The named options `a` takes, its ancestors' (the global ones) included.
std::vector<std::string> OptionNames(const CLI::App* a) {
  std::vector<std::string> names;
  for (; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* o :
         a->get_options([](const CLI::Option* o) { return !o->get_group().empty(); })) {
      for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
      for (const std::string& n : o->get_snames()) names.push_back("-" + n);
    }
  }
  return names;
}

std::string UnknownOption(const CLI::App* at, const std::string& arg) {
  const std::string typed = arg.substr(0, arg.find('='));
  // Compared without their dashes: "-x" is not one letter away from "-o".
  std::vector<std::string> bare;
  const std::vector<std::string> names = OptionNames(at);
  for (const std::string& n : names) bare.push_back(n.substr(n.find_first_not_of('-')));
  const size_t first = typed.find_first_not_of('-');
  std::vector<std::string> hints =
      Suggest(first == std::string::npos ? "" : typed.substr(first), bare);
  for (std::string& h : hints) {
    h = names[std::find(bare.begin(), bare.end(), h) - bare.begin()];
  }
  const std::string path = PathOf(at);
  return absl::StrCat("lbctl: unknown option \"", typed, "\"",
                      path.empty() ? "" : absl::StrCat(" for \"", path, "\""), DidYouMean(hints),
                      "\n", UsageHint(at));
}

// What to say about a command line CLI11 refused (not --help or --version).
std::string ParseErrorMessage(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* leaf = &app;
  while (!leaf->get_subcommands().empty()) leaf = leaf->get_subcommands().front();
  const std::vector<std::string> rest = app.remaining(true);
  const bool wants_command = !Visible(*leaf).empty();
  if (wants_command) {
    for (const std::string& r : rest) {
      if (!absl::StartsWith(r, "-")) return UnknownCommand(leaf, r);
    }
  }
  for (const std::string& r : rest) {
    if (absl::StartsWith(r, "-") && r != "-") return UnknownOption(leaf, r);
  }
  const std::string path = PathOf(leaf);
  if (!rest.empty()) {
    return absl::StrCat("lbctl: unexpected argument \"", rest.front(), "\" for \"",
                        path.empty() ? "lbctl" : path, "\"\n", UsageHint(leaf));
  }
  if (wants_command) {
    std::vector<std::string> names;
    for (const CLI::App* sub : Visible(*leaf)) names.push_back(sub->get_name());
    return absl::StrCat("lbctl: ", path.empty() ? "a command" : "\"" + path + "\" needs a command",
                        path.empty() ? " is required" : "", ": ", absl::StrJoin(names, ", "), "\n",
                        UsageHint(leaf));
  }
  return absl::StrCat("lbctl: ", e.what(), "\n", UsageHint(leaf));
}

// `lbctl help [COMMAND...]`: the usage of lbctl or of a command.
int RunHelp(const CLI::App& app, const std::vector<std::string>& words, std::FILE* out,
            std::FILE* err) {
  const CLI::App* at = &app;
  std::string prev = "lbctl";
  for (const std::string& w : words) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : Visible(*at)) {
      if (sub->get_name() == w) next = sub;
    }
    if (next == nullptr) {
      Print(err, UnknownCommand(at, w));
      return kExitInvalid;
    }
    if (at != &app) prev += " " + at->get_name();
    at = next;
  }
  Print(out, at == &app ? app.help() : at->help(prev));
  return kExitOk;
}

}  // namespace

int RunLbctl(int argc, const char* const* argv, std::FILE* out, std::FILE* err) {
  Args args;
  CLI::App app{"lbctl: operate ballast's lbagent (layer-4 load balancer)", "lbctl"};
  app.require_subcommand(1);
  app.footer("Run \"lbctl help COMMAND\" for a command's options; man lbctl for all of them.");
  app.set_version_flag("--version", std::string("lbctl ") + BALLAST_VERSION);
  app.add_option("--socket", args.socket, "lbagent's admin unix socket")
      ->type_name("PATH")
      ->capture_default_str();
  CLI::Option* addr =
      app.add_option("--addr", args.addr, "lbagent's admin TCP listener HOST:PORT (mutual TLS)")
          ->type_name("HOST:PORT");
  app.add_option("--cacert", args.cacert, "CA that signed lbagent's certificate (PEM)")
      ->type_name("FILE");
  app.add_option("--cert", args.cert, "this client's certificate (PEM)")->type_name("FILE");
  app.add_option("--key", args.key, "this client's private key (PEM)")->type_name("FILE");
  app.add_option("--tls-server-name", args.server_name,
                 "name to expect in lbagent's certificate (default: the --addr host)")
      ->type_name("NAME");
  app.get_option("--socket")->excludes(addr);
  CLI::Option* json =
      app.add_flag("--json", args.json, "print API responses in protobuf's JSON mapping");
  std::string output = "table";
  CLI::Option* output_opt =
      app.add_option("-o,--output", output, "output format: table (default) or json (= --json)")
          ->check(CLI::IsMember({"table", "json"}));
  app.add_option("--timeout", args.timeout, "per-call deadline, e.g. 10s")
      ->type_name("DURATION")
      ->capture_default_str();

  std::map<absl::string_view, CLI::App*> nouns;
  std::map<const CLI::App*, const Command*> command_of;
  std::vector<std::string> top;
  for (const Command& c : Commands()) {
    CLI::App*& noun = nouns[c.noun];
    if (noun == nullptr) {
      noun = app.add_subcommand(std::string(c.noun),
                                c.verb.empty() ? std::string(c.help) : NounHelp(c.noun));
      // Global flags anywhere: `lbctl status --json` as `lbctl --json status`.
      noun->fallthrough();
      top.emplace_back(c.noun);
    }
    CLI::App* leaf = noun;
    if (!c.verb.empty()) {
      noun->require_subcommand(1);
      leaf = noun->add_subcommand(std::string(c.verb), std::string(c.help));
      leaf->fallthrough();
    }
    c.add_options(*leaf, args);
    command_of[leaf] = &c;
  }
  // help and version: local, they never reach the agent.
  std::vector<std::string> help_words;
  CLI::App* help = app.add_subcommand("help", "show how to use lbctl or one of its commands");
  help->fallthrough();
  help->add_option("COMMAND", help_words, "a command, e.g. vip add")
      ->type_name("{" + absl::StrJoin(top, ",") + "}");
  CLI::App* version = app.add_subcommand("version", "print lbctl's version (as --version)");
  version->fallthrough();
  // The man page and the completion scripts, generated from this tree at build time.
  cli_doc::AddDocFlags(app, LbctlManInfo(), out);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    // --help, --version, or a --generate-* flag (which printed its text).
    std::ostringstream o, er;
    app.exit(e, o, er);
    Print(out, o.str());
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (argc <= 1) {
      Print(err, "lbctl: a command is required\n");
      Print(err, app.help());
      return kExitInvalid;
    }
    Print(err, ParseErrorMessage(app, e));
    return kExitInvalid;
  }
  if (help->parsed()) {
    // Forget the parse: a parsed subcommand's help is what CLI11 prints for its parent.
    const std::vector<std::string> words = help_words;
    app.clear();
    return RunHelp(app, words, out, err);
  }
  if (version->parsed()) {
    Print(out, absl::StrCat("lbctl ", BALLAST_VERSION, "\n"));
    return kExitOk;
  }
  if (output_opt->count() != 0) {
    if (json->count() != 0 && output != "json") {
      Print(err, "lbctl: --json and -o " + output + " disagree; give one of them\n");
      return kExitInvalid;
    }
    args.json = output == "json";
  }
  // Where the agent is, when neither --socket nor --addr says: $LBCTL_ADDR,
  // else $LBCTL_SOCKET, else the default socket.
  if (app.get_option("--socket")->count() == 0 && addr->count() == 0) {
    const char* env_addr = std::getenv("LBCTL_ADDR");
    const char* env_socket = std::getenv("LBCTL_SOCKET");
    if (env_addr != nullptr && *env_addr != '\0') {
      args.addr = env_addr;
    } else if (env_socket != nullptr && *env_socket != '\0') {
      args.socket = env_socket;
    }
  }

  const CLI::App* leaf = &app;
  while (!leaf->get_subcommands().empty()) leaf = leaf->get_subcommands().front();
  auto it = command_of.find(leaf);
  if (it == command_of.end()) {
    Print(err, absl::StrCat("lbctl: a command is required\n", UsageHint(&app)));
    return kExitInvalid;
  }

  Target target;
  target.socket = args.socket;
  target.addr = args.addr;
  target.cacert = args.cacert;
  target.cert = args.cert;
  target.key = args.key;
  target.server_name = args.server_name;
  absl::StatusOr<absl::Duration> timeout = ParseDuration(args.timeout, "--timeout");
  if (!timeout.ok() || *timeout <= absl::ZeroDuration()) {
    Print(err, absl::StrCat("lbctl: ",
                            timeout.ok() ? "--timeout must be positive"
                                         : std::string(timeout.status().message()),
                            "\n"));
    return kExitInvalid;
  }
  target.timeout = *timeout;

  Session session(target);
  absl::Status status = it->second->run(session, args, out);
  if (status.ok()) return kExitOk;
  // Messages from local checks (Client::Connect) are already complete.
  const bool local = absl::StartsWith(status.message(), "cannot reach lbagent") ||
                     absl::StartsWith(status.message(), "permission denied on ");
  Print(err, absl::StrCat(local ? absl::StrCat("lbctl: ", status.message())
                                : ErrorMessage(status, session.target_text()),
                          "\n"));
  return ExitCodeFor(status);
}

}  // namespace ballast::lbctl
