#include "tools/cli_doc/completion.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ballast::cli_doc {
namespace {

bool Hidden(const CLI::Option* o) { return o->get_group().empty(); }
bool HiddenApp(const CLI::App* a) { return a->get_group().empty(); }
bool IsHelp(const CLI::Option* o) {
  return o->get_lnames().size() == 1 && o->get_lnames()[0] == "help";
}

void Walk(const CLI::App& app, const std::string& path, std::vector<CompletionLevel>& out) {
  CompletionLevel level;
  level.path = path;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !HiddenApp(a); })) {
    level.subs.emplace_back(sub->get_name(), sub->get_description());
  }
  for (const CLI::Option* o : app.get_options([](const CLI::Option* o) { return !Hidden(o); })) {
    if (!o->nonpositional()) {
      level.positionals.push_back(ValuesOf(*o));
      continue;
    }
    // Every level has its --help; the top level's is offered everywhere.
    if (!path.empty() && IsHelp(o)) continue;
    CompletionLevel::Opt opt;
    for (const std::string& n : o->get_lnames()) opt.names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) opt.names.push_back("-" + n);
    opt.help = o->get_description();
    opt.takes_value = o->get_expected_min() > 0 || o->get_expected_max() > 0;
    if (opt.takes_value) opt.values = ValuesOf(*o);
    level.opts.push_back(std::move(opt));
  }
  out.push_back(std::move(level));
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !HiddenApp(a); })) {
    Walk(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

// "_" for the program, "_ vip add" for a command path (bash refuses an
// empty key in an associative array).
std::string Key(const std::string& path) { return path.empty() ? "_" : "_ " + path; }

// The scripts' tables, shared by the three shells:
//   subs[key]      the commands below a path, space-separated
//   opts[key]      its option words
//   vals[key OPT]  for each option taking a value: its words, "@files", or ""
//   vals[key #N]   the same for its Nth positional (1-based), when it has any
struct Tables {
  std::map<std::string, std::string> subs, opts, vals;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> sub_help;
};

std::string ValueWords(const ValueCompletion& v) {
  return v.files ? std::string("@files") : absl::StrJoin(v.choices, " ");
}

Tables MakeTables(const CLI::App& app) {
  Tables t;
  for (const CompletionLevel& l : CompletionLevels(app)) {
    const std::string key = Key(l.path);
    std::vector<std::string> names, words;
    for (const auto& [name, help] : l.subs) names.push_back(name);
    if (!names.empty()) {
      std::sort(names.begin(), names.end());
      t.subs[key] = absl::StrJoin(names, " ");
      t.sub_help[key] = l.subs;
    }
    for (const CompletionLevel::Opt& o : l.opts) {
      for (const std::string& n : o.names) {
        words.push_back(n);
        if (o.takes_value) t.vals[key + " " + n] = ValueWords(o.values);
      }
    }
    if (!words.empty()) {
      std::sort(words.begin(), words.end());
      t.opts[key] = absl::StrJoin(words, " ");
    }
    for (size_t i = 0; i < l.positionals.size(); ++i) {
      const ValueCompletion& v = l.positionals[i];
      if (v.files || !v.choices.empty()) {
        t.vals[key + " #" + std::to_string(i + 1)] = ValueWords(v);
      }
    }
  }
  return t;
}

// Double-quoted for bash and zsh: backslash, quote, dollar and backquote escaped.
std::string Dq(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Single-quoted for fish: backslash and quote escaped.
std::string Sq(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string FunctionName(const std::string& name) {
  std::string fn = "_ballast_" + name;
  std::replace(fn.begin(), fn.end(), '-', '_');
  return fn;
}

void AssocArray(std::ostringstream& b, const std::string& name,
                const std::map<std::string, std::string>& m) {
  b << "  " << name << "=(";
  for (const auto& [k, v] : m) b << "\n    [" << Dq(k) << "]=" << Dq(v);
  b << "\n  )\n";
}

}  // namespace

ValueCompletion ValuesOf(const CLI::Option& o) {
  ValueCompletion v;
  const std::string type = o.get_type_name();
  const size_t open = type.rfind('{');
  const size_t close = type.rfind('}');
  if (open != std::string::npos && close != std::string::npos && open < close) {
    for (absl::string_view w :
         absl::StrSplit(absl::string_view(type).substr(open + 1, close - open - 1), ',')) {
      w = absl::StripAsciiWhitespace(w);
      if (!w.empty()) v.choices.emplace_back(w);
    }
    return v;
  }
  const absl::string_view base = absl::string_view(type).substr(0, type.find(':'));
  v.files = base == "FILE" || base == "PATH" || base == "DIR";
  return v;
}

std::vector<CompletionLevel> CompletionLevels(const CLI::App& app) {
  std::vector<CompletionLevel> out;
  Walk(app, "", out);
  return out;
}

std::string BashCompletion(const CLI::App& app, const std::string& name) {
  const Tables t = MakeTables(app);
  const std::string fn = FunctionName(name);
  std::ostringstream b;
  b << "# bash completion for " << name << ", generated from its command table "
    << "(--generate-bash-completion); do not edit.\n";
  b << fn << "() {\n";
  b << "  local cur=${COMP_WORDS[COMP_CWORD]} path=_ w i opt= npos=0 v\n";
  b << "  local -A subs opts vals\n";
  AssocArray(b, "subs", t.subs);
  AssocArray(b, "opts", t.opts);
  AssocArray(b, "vals", t.vals);
  // The words before the cursor: a valued option takes the next word, a
  // command moves down the tree, anything else is a positional.
  b << R"sh(  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ -n $opt ]]; then opt=; continue; fi
    if [[ $w == -* ]]; then
      [[ $w != *=* ]] && { [[ -v vals["$path $w"] ]] || [[ -v vals["_ $w"] ]]; } && opt=$w
      continue
    fi
    if [[ " ${subs[$path]-} " == *" $w "* ]]; then path="$path $w"; npos=0; else npos=$((npos + 1)); fi
  done
  if [[ -n $opt ]]; then
    if [[ -v vals["$path $opt"] ]]; then v=${vals["$path $opt"]}; else v=${vals["_ $opt"]}; fi
  elif [[ $cur == -* ]]; then
    v=${opts[$path]-}
    [[ $path == _ ]] || v+=" ${opts[_]-}"
  elif [[ -n ${subs[$path]-} ]]; then
    v=${subs[$path]}
  else
    v=${vals["$path #$((npos + 1))"]-}
  fi
  if [[ $v == @files ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$v" -- "$cur"))
  fi
}
)sh";
  b << "complete -F " << fn << " " << name << "\n";
  return b.str();
}

std::string ZshCompletion(const CLI::App& app, const std::string& name) {
  const Tables t = MakeTables(app);
  const std::string fn = FunctionName(name);
  std::ostringstream b;
  b << "#compdef " << name << "\n";
  b << "# zsh completion for " << name << ", generated from its command table "
    << "(--generate-zsh-completion); do not edit.\n";
  b << fn << "() {\n";
  // `path` is zsh's array tied to $PATH: the command path is `at`.
  b << "  local at=_ w i opt= npos=0 v cur=${words[CURRENT]}\n";
  b << "  local -A subs opts vals help\n";
  AssocArray(b, "subs", t.subs);
  AssocArray(b, "opts", t.opts);
  AssocArray(b, "vals", t.vals);
  std::map<std::string, std::string> help;
  for (const auto& [key, subs] : t.sub_help) {
    for (const auto& [sub, text] : subs) help[key + " " + sub] = text;
  }
  AssocArray(b, "help", help);
  b << R"sh(  for ((i = 2; i < CURRENT; i++)); do
    w=${words[i]}
    if [[ -n $opt ]]; then opt=; continue; fi
    if [[ $w == -* ]]; then
      [[ $w != *=* ]] && (( ${+vals[$at $w]} || ${+vals[_ $w]} )) && opt=$w
      continue
    fi
    if [[ " ${subs[$at]} " == *" $w "* ]]; then at="$at $w"; npos=0; else npos=$((npos + 1)); fi
  done
  if [[ -n $opt ]]; then
    if (( ${+vals[$at $opt]} )); then v=${vals[$at $opt]}; else v=${vals[_ $opt]}; fi
  elif [[ $cur == -* ]]; then
    v=${opts[$at]}
    [[ $at == _ ]] || v+=" ${opts[_]}"
  elif [[ -n ${subs[$at]} ]]; then
    local -a names descs
    names=(${=subs[$at]})
    for w in $names; do descs+=("$w -- ${help[$at $w]}"); done
    compadd -l -d descs -- $names
    return
  else
    v=${vals[$at #$((npos + 1))]}
  fi
  if [[ $v == @files ]]; then
    _files
  else
    compadd -- ${=v}
  fi
}
)sh";
  b << "if [[ $funcstack[1] == _" << name << " ]]; then\n  " << fn << " \"$@\"\nelse\n  compdef "
    << fn << " " << name << "\nfi\n";
  return b.str();
}

std::string FishCompletion(const CLI::App& app, const std::string& name) {
  const Tables t = MakeTables(app);
  const std::string fn = "_" + FunctionName(name);
  std::ostringstream b;
  b << "# fish completion for " << name << ", generated from its command table "
    << "(--generate-fish-completion); do not edit.\n";
  // The state of the words before the cursor, as in the bash script: the
  // command path, the positionals typed at it, and whether an option's
  // value is pending.
  b << "function " << fn << "_state\n";
  b << "    set -l valued";
  for (const auto& [k, v] : t.vals) {
    if (k.find(" #") == std::string::npos) b << " " << Sq(k);
  }
  b << "\n    set -l subs";
  for (const auto& [key, subs] : t.sub_help) {
    for (const auto& [sub, text] : subs) b << " " << Sq(key + " " + sub);
  }
  b << R"fish(
    set -l at _
    set -l npos 0
    set -l pending 0
    for w in (commandline -opc)[2..-1]
        if test $pending = 1
            set pending 0
            continue
        end
        if string match -q -- '-*' $w
            if not string match -q -- '*=*' $w
                and begin; contains -- "$at $w" $valued; or contains -- "_ $w" $valued; end
                set pending 1
            end
            continue
        end
        if contains -- "$at $w" $subs
            set at "$at $w"
            set npos 0
        else
            set npos (math $npos + 1)
        end
    end
    printf '%s\n' $at $npos $pending
end
)fish";
  b << "function " << fn << "_at --description 'the words so far lead to command path $argv[1]'\n"
    << "    set -l s (" << fn << "_state)\n"
    << "    test \"$s[1]\" = \"$argv[1]\" -a \"$s[3]\" = 0\nend\n";
  b << "function " << fn
    << "_in --description 'the words so far are below command path $argv[1] or at it'\n"
    << "    set -l s (" << fn << "_state)\n"
    << "    test \"$s[1]\" = \"$argv[1]\"\nend\n";
  b << "function " << fn
    << "_pos --description 'the next word is positional $argv[2] of $argv[1]'\n"
    << "    set -l s (" << fn << "_state)\n"
    << "    test \"$s[1]\" = \"$argv[1]\" -a \"$s[3]\" = 0 -a (math $s[2] + 1) = "
       "\"$argv[2]\"\nend\n";
  b << "complete -c " << name << " -f\n";
  for (const CompletionLevel& l : CompletionLevels(app)) {
    const std::string key = Key(l.path);
    for (const auto& [sub, text] : l.subs) {
      b << "complete -c " << name << " -n " << Sq(fn + "_at " + Sq(key)) << " -a " << Sq(sub)
        << " -d " << Sq(text) << "\n";
    }
    for (const CompletionLevel::Opt& o : l.opts) {
      b << "complete -c " << name;
      if (!l.path.empty()) b << " -n " << Sq(fn + "_in " + Sq(key));
      for (const std::string& n : o.names) {
        const bool lng = n.rfind("--", 0) == 0;
        b << (lng ? " -l " : " -s ") << Sq(n.substr(lng ? 2 : 1));
      }
      if (o.takes_value) {
        if (o.values.files) {
          b << " -r -F";
        } else {
          b << " -x";
          if (!o.values.choices.empty()) b << " -a " << Sq(absl::StrJoin(o.values.choices, " "));
        }
      }
      b << " -d " << Sq(o.help) << "\n";
    }
    for (size_t i = 0; i < l.positionals.size(); ++i) {
      const ValueCompletion& v = l.positionals[i];
      if (!v.files && v.choices.empty()) continue;
      b << "complete -c " << name << " -n "
        << Sq(fn + "_pos " + Sq(key) + " " + std::to_string(i + 1))
        << (v.files ? std::string(" -F") : " -a " + Sq(absl::StrJoin(v.choices, " "))) << "\n";
    }
  }
  return b.str();
}

}  // namespace ballast::cli_doc
