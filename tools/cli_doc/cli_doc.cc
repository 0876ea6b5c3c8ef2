#include "tools/cli_doc/cli_doc.h"

#include <algorithm>
#include <functional>
#include <sstream>

namespace ballast::cli_doc {
namespace {

bool Hidden(const CLI::Option* o) { return o->get_group().empty(); }
bool HiddenApp(const CLI::App* a) { return a->get_group().empty(); }

std::vector<const CLI::App*> Subcommands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* a) { return !HiddenApp(a); });
}

std::vector<const CLI::Option*> Options(const CLI::App& app) {
  return app.get_options([](const CLI::Option* o) { return !Hidden(o); });
}

// "-o, --output FORMAT" or "VIP" for a positional.
std::string OptionSignature(const CLI::Option* o) {
  std::string s;
  if (o->nonpositional()) {
    for (const std::string& n : o->get_snames()) s += (s.empty() ? "-" : ", -") + n;
    for (const std::string& n : o->get_lnames()) s += (s.empty() ? "--" : ", --") + n;
    if (o->get_expected_min() > 0 || o->get_expected_max() > 0) {
      std::string type = o->get_type_name();
      s += " " + (type.empty() ? std::string("VALUE") : type);
    }
  } else {
    s = o->get_name(true);
    std::transform(s.begin(), s.end(), s.begin(), ::toupper);
  }
  return s;
}

std::string OptionText(const CLI::Option* o) {
  std::string d = o->get_description();
  if (!o->get_default_str().empty()) d += " (default: " + o->get_default_str() + ")";
  if (o->get_required() && o->nonpositional()) d += " Required.";
  return d;
}

void EmitOptions(std::ostringstream& m, const std::vector<const CLI::Option*>& opts) {
  for (const CLI::Option* o : opts) {
    if (o->get_lnames().size() == 1 && o->get_lnames()[0] == "help") continue;
    m << ".TP\n.B " << RoffEscape(OptionSignature(o)) << "\n" << RoffEscape(OptionText(o)) << "\n";
  }
}

// Plain text paragraphs to roff: blank lines separate paragraphs, lines
// indented by two spaces are shown as-is.
void EmitText(std::ostringstream& m, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  bool in_example = false;
  while (std::getline(in, line)) {
    const bool example = line.rfind("  ", 0) == 0;
    if (line.empty()) {
      if (in_example) m << ".fi\n.RE\n";
      in_example = false;
      m << ".PP\n";
      continue;
    }
    if (example && !in_example) {
      m << ".RS\n.nf\n";
      in_example = true;
    } else if (!example && in_example) {
      m << ".fi\n.RE\n";
      in_example = false;
    }
    m << RoffEscape(example ? line.substr(2) : line) << "\n";
  }
  if (in_example) m << ".fi\n.RE\n";
}

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::toupper);
  return s;
}

// Every command path below `app` with its app: "status", "vip add", ...
void Walk(const CLI::App& app, const std::string& path,
          std::vector<std::pair<std::string, const CLI::App*>>& out) {
  for (const CLI::App* sub : Subcommands(app)) {
    const std::string p = path.empty() ? sub->get_name() : path + " " + sub->get_name();
    out.emplace_back(p, sub);
    Walk(*sub, p, out);
  }
}

std::string Positionals(const CLI::App& app) {
  std::string s;
  for (const CLI::Option* o : Options(app)) {
    if (o->nonpositional()) continue;
    std::string n = OptionSignature(o);
    s += " " + (o->get_required() ? n : "[" + n + "]");
  }
  return s;
}

}  // namespace

std::string RoffEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  // A line that starts with a dot or a quote would be read as a request.
  std::string result;
  std::istringstream in(out);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (!first) result += "\n";
    first = false;
    if (!line.empty() && (line[0] == '.' || line[0] == '\'')) result += "\\&";
    result += line;
  }
  return result;
}

std::string ManPage(const CLI::App& app, const ManInfo& info) {
  std::ostringstream m;
  m << ".\\\" Generated from " << info.name << "'s command table (--generate-man); do not edit.\n";
  m << ".TH " << Upper(info.name) << " " << info.section << " \"\" \"ballast " << info.version
    << "\" \"ballast\"\n";
  m << ".SH NAME\n" << RoffEscape(info.name) << " \\- " << RoffEscape(info.summary) << "\n";

  std::vector<std::pair<std::string, const CLI::App*>> commands;
  Walk(app, "", commands);
  m << ".SH SYNOPSIS\n";
  if (commands.empty()) {
    m << ".B " << RoffEscape(info.name) << "\n[\\fIOPTIONS\\fR]" << RoffEscape(Positionals(app))
      << "\n";
  } else {
    m << ".B " << RoffEscape(info.name) << "\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR "
      << "[\\fIOPTIONS\\fR]\n";
  }
  m << ".SH DESCRIPTION\n";
  EmitText(m, info.description.empty() ? app.get_description() : info.description);

  m << ".SH " << (commands.empty() ? "OPTIONS" : "GLOBAL OPTIONS") << "\n";
  if (!commands.empty()) {
    m << "Accepted before or after the command.\n";
  }
  EmitOptions(m, Options(app));
  if (!commands.empty()) {
    m << ".SH COMMANDS\n";
    for (const auto& [path, sub] : commands) {
      const bool leaf = Subcommands(*sub).empty();
      m << ".SS \"" << RoffEscape(info.name + " " + path + (leaf ? Positionals(*sub) : ""))
        << "\"\n";
      m << RoffEscape(sub->get_description()) << "\n";
      if (leaf) {
        std::vector<const CLI::Option*> named;
        for (const CLI::Option* o : Options(*sub)) {
          if (o->nonpositional()) named.push_back(o);
        }
        EmitOptions(m, named);
      }
    }
  }
  for (const auto& [title, text] : info.sections) {
    m << ".SH " << RoffEscape(Upper(title)) << "\n";
    EmitText(m, text);
  }
  return m.str();
}

void AddDocFlags(CLI::App& app, ManInfo info, std::FILE* out) {
  CLI::App* a = &app;
  const std::string name = info.name;
  const struct {
    const char* flag;
    const char* help;
    std::function<std::string()> text;
  } generators[] = {
      {"--generate-man", "print the man page (roff) and exit",
       [a, info] { return ManPage(*a, info); }},
      {"--generate-bash-completion", "print a bash completion script and exit",
       [a, name] { return BashCompletion(*a, name); }},
      {"--generate-zsh-completion", "print a zsh completion function and exit",
       [a, name] { return ZshCompletion(*a, name); }},
      {"--generate-fish-completion", "print fish completions and exit",
       [a, name] { return FishCompletion(*a, name); }},
  };
  for (const auto& g : generators) {
    app.add_flag_callback(
           g.flag,
           [text = g.text, out] {
             const std::string t = text();
             std::fwrite(t.data(), 1, t.size(), out);
             throw CLI::Success();
           },
           g.help)
        ->group("");
  }
}

}  // namespace ballast::cli_doc
