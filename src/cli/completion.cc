// SPDX-License-Identifier: Apache-2.0
#include "cli/completion.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <vector>

namespace tarmac::cli {
namespace {

// One command as the scripts need it: its words ("backfill submit"), its
// subcommands and options, and the choices of each option that has some.
struct Entry {
  std::string path;
  std::vector<std::pair<std::string, std::string>> subcommands;  // name, description
  std::vector<std::pair<std::string, std::string>> options;      // --name, description
  std::vector<std::pair<std::string, std::string>> choices;      // --name, "a b c"
};

// "TEXT:{a,b,c}" -> "a b c"; "" when the option has no fixed choices.
std::string ChoicesOf(const CLI::Option* o) {
  std::string type = o->get_type_name();
  size_t open = type.find('{');
  size_t close = type.find('}', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return "";
  std::string out = type.substr(open + 1, close - open - 1);
  for (char& c : out) {
    if (c == ',') c = ' ';
  }
  return out;
}

void Walk(const CLI::App& app, const std::string& path, std::vector<Entry>* out) {
  Entry e;
  e.path = path;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name().empty()) continue;
    e.subcommands.emplace_back(sub->get_name(), sub->get_description());
  }
  // A command that falls through takes its parent's options after its name.
  std::vector<const CLI::Option*> options = app.get_options();
  if (app.get_fallthrough() && app.get_parent() != nullptr) {
    for (const CLI::Option* o : app.get_parent()->get_options()) options.push_back(o);
  }
  for (const CLI::Option* o : options) {
    for (const std::string& name : o->get_lnames()) {
      if (std::any_of(e.options.begin(), e.options.end(),
                      [&](const auto& x) { return x.first == "--" + name; }))
        continue;
      e.options.emplace_back("--" + name, o->get_description());
      if (std::string c = ChoicesOf(o); !c.empty()) e.choices.emplace_back("--" + name, c);
    }
  }
  out->push_back(e);
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->get_name().empty())
      Walk(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t tab; (tab = line.find('\t', at)) != std::string::npos; at = tab + 1)
    out.push_back(line.substr(at, tab - at));
  out.push_back(line.substr(at));
  return out;
}

// The entries `text` (CompletionEntries) names, under the command `name`.
std::vector<Entry> ReadEntries(const std::string& name, const std::string& text) {
  std::vector<Entry> out;
  std::map<std::string, size_t> at;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = Fields(line);
    if (f.size() < 2) continue;
    std::string path = f[1].empty() ? name : name + " " + f[1];
    if (f[0] == "cmd") {
      at[path] = out.size();
      out.push_back(Entry{path, {}, {}, {}});
      continue;
    }
    auto it = at.find(path);
    if (it == at.end() || f.size() < 4) continue;
    Entry& e = out[it->second];
    if (f[0] == "sub") e.subcommands.emplace_back(f[2], f[3]);
    if (f[0] == "opt") e.options.emplace_back(f[2], f[3]);
    if (f[0] == "choice") e.choices.emplace_back(f[2], f[3]);
  }
  return out;
}

// One line of a field: no tabs or newlines in it.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n') c = ' ';
  }
  return text;
}

std::string Words(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out;
  for (const auto& [name, description] : items) out += (out.empty() ? "" : " ") + name;
  return out;
}

// Fish wants descriptions on one line, without quotes that end them.
std::string FishText(std::string text) {
  if (size_t nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  std::string out;
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out.size() > 80 ? out.substr(0, 77) + "..." : out;
}

std::string Bash(const std::vector<Entry>& entries) {
  std::string cases;
  for (const Entry& e : entries) {
    std::string words = Words(e.subcommands);
    words += (words.empty() ? "" : " ") + Words(e.options);
    std::string choice_cases;
    for (const auto& [option, values] : e.choices)
      choice_cases += fmt::format("      {}) words=\"{}\";;\n", option, values);
    cases += fmt::format("    \"{}\")\n      words=\"{}\"\n      case \"$prev\" in\n{}      esac;;\n", e.path,
                         words, choice_cases);
  }
  return fmt::format(
      "# bash completion for tarmac (tarmac completion bash)\n"
      "_tarmac() {{\n"
      "  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} path=\"\" words=\"\" w i\n"
      "  COMPREPLY=()\n"
      "  # The command path: the words before the cursor that name commands.\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=${{COMP_WORDS[i]}}\n"
      "    [[ $w == -- ]] && return 0\n"
      "    [[ $w == -* ]] && continue\n"
      "    case \" $(_tarmac_subcommands \"$path\") \" in *\" $w \"*) path=${{path:+$path }}$w;; esac\n"
      "  done\n"
      "  case \"$path\" in\n{}  esac\n"
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "}}\n"
      "_tarmac_subcommands() {{\n"
      "  case \"$1\" in\n{}  esac\n"
      "}}\n"
      "_tarmac_options() {{\n"
      "  case \"$1\" in\n{}  esac\n"
      "}}\n"
      "complete -o default -F _tarmac tarmac\n",
      cases,
      [&] {
        std::string subs;
        for (const Entry& e : entries)
          subs += fmt::format("    \"{}\") echo \"{}\";;\n", e.path, Words(e.subcommands));
        return subs;
      }(),
      [&] {
        std::string opts;
        for (const Entry& e : entries)
          opts += fmt::format("    \"{}\") echo \"{}\";;\n", e.path, Words(e.options));
        return opts;
      }());
}

std::string Fish(const std::vector<Entry>& entries) {
  std::string out = "# fish completion for tarmac (tarmac completion fish)\ncomplete -c tarmac -f\n";
  for (const Entry& e : entries) {
    // The condition: exactly this command path has been typed.
    std::string condition;
    if (e.path.empty()) {
      condition = "__fish_use_subcommand";
    } else {
      std::string last = e.path.substr(e.path.rfind(' ') == std::string::npos ? 0 : e.path.rfind(' ') + 1);
      condition = "__fish_seen_subcommand_from " + last;
    }
    for (const auto& [name, description] : e.subcommands) {
      out +=
          fmt::format("complete -c tarmac -n '{}' -a {} -d '{}'\n", condition, name, FishText(description));
    }
    for (const auto& [name, description] : e.options) {
      std::string choices;
      for (const auto& [option, values] : e.choices) {
        if (option == name) choices = fmt::format(" -x -a '{}'", values);
      }
      out += fmt::format("complete -c tarmac -n '{}' -l {}{} -d '{}'\n", condition, name.substr(2), choices,
                         FishText(description));
    }
  }
  return out;
}

}  // namespace

std::string CompletionEntries(const CLI::App& app) {
  std::vector<Entry> entries;
  Walk(app, "", &entries);
  std::string out;
  for (const Entry& e : entries) {
    out += "cmd\t" + e.path + "\n";
    for (const auto& [name, text] : e.subcommands)
      out += "sub\t" + e.path + "\t" + name + "\t" + OneLine(text) + "\n";
    for (const auto& [name, text] : e.options) {
      if (name == kCompletionEntriesFlag) continue;
      out += "opt\t" + e.path + "\t" + name + "\t" + OneLine(text) + "\n";
    }
    for (const auto& [name, values] : e.choices)
      out += "choice\t" + e.path + "\t" + name + "\t" + values + "\n";
  }
  return out;
}

std::string CompletionScript(const CLI::App& app, const std::string& shell,
                             const std::map<std::string, std::string>& siblings) {
  std::vector<Entry> entries;
  Walk(app, "", &entries);
  // A sibling's own commands replace the bare name the table lists.
  for (const auto& [name, text] : siblings) {
    std::vector<Entry> theirs = ReadEntries(name, text);
    if (theirs.empty()) continue;
    std::erase_if(entries, [&name = name](const Entry& e) { return e.path == name; });
    entries.insert(entries.end(), theirs.begin(), theirs.end());
  }
  if (shell == "bash") return Bash(entries);
  // zsh runs the bash script through its bash-completion layer.
  if (shell == "zsh") {
    return "#compdef tarmac\n# zsh completion for tarmac (tarmac completion zsh)\n"
           "autoload -U +X bashcompinit && bashcompinit\n" +
           Bash(entries);
  }
  if (shell == "fish") return Fish(entries);
  return "";
}

CLI::App* AddCompletionCommand(CLI::App* app, std::string* shell) {
  CLI::App* cmd = app->add_subcommand("completion",
                                      "Print a shell completion script: eval \"$(tarmac completion bash)\", "
                                      "or save it where your shell loads "
                                      "completions (the Debian package installs them)");
  cmd->add_option("shell", *shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  return cmd;
}

}  // namespace tarmac::cli
