// SPDX-License-Identifier: Apache-2.0
#include "cli/help_format.h"

#include "common/text_wrap.h"

namespace tarmac::cli {
namespace {

// "--no-wait{true},--queue{false}" -> "--no-wait,--queue".
std::string WithoutFlagValues(std::string name) {
  for (size_t open = name.find('{'); open != std::string::npos; open = name.find('{')) {
    size_t close = name.find('}', open);
    if (close == std::string::npos) break;
    name.erase(open, close - open + 1);
  }
  return name;
}

}  // namespace

std::string WrapLongLines(const std::string& text, size_t width) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (width > 0 && line.size() > width) {
      size_t column = line.find_first_not_of(' ');
      // A table row: under its last column (the text after the last run of
      // two spaces or more), when that starts within the line's first half.
      size_t gap = line.rfind("  ", width);
      if (gap != std::string::npos && gap > column) {
        size_t cell = line.find_first_not_of(' ', gap);
        if (cell != std::string::npos && cell < width / 2) column = cell;
      }
      if (column == std::string::npos) column = 0;
      line = line.substr(0, column) + WrapText(std::string_view(line).substr(column), width, column, column);
    }
    out += line;
    if (end == std::string::npos) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

std::string ValueLabel(const std::string& type_name) {
  if (size_t open = type_name.find('{'); open != std::string::npos) {
    size_t close = type_name.find('}', open);
    return type_name.substr(open, close == std::string::npos ? std::string::npos : close - open + 1);
  }
  std::string base = type_name.substr(0, type_name.find(':'));
  std::string word = base == "INT" || base == "UINT" ? "N" : base == "FLOAT" ? "X" : base;
  if (size_t range = type_name.find(" in ["); range != std::string::npos) word += type_name.substr(range);
  return word;
}

std::string HelpFormatter::Entry(const std::string& name, const std::string& description) const {
  std::string out = "  " + name;
  if (description.empty()) return out + "\n";
  const size_t column = get_column_width();
  out += out.size() >= column ? "\n" + std::string(column, ' ') : std::string(column - out.size(), ' ');
  return out + WrapText(description, width_, column, column) + "\n";
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  return WrapLongLines(CLI::Formatter::make_description(app), width_);
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  return WrapLongLines(CLI::Formatter::make_footer(app), width_);
}

std::string HelpFormatter::make_option(const CLI::Option* option, bool is_positional) const {
  return Entry(make_option_name(option, is_positional) + make_option_opts(option), make_option_desc(option));
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  return Entry(sub->get_display_name(true), sub->get_description());
}

std::string HelpFormatter::make_option_name(const CLI::Option* option, bool is_positional) const {
  return WithoutFlagValues(CLI::Formatter::make_option_name(option, is_positional));
}

std::string HelpFormatter::make_option_opts(const CLI::Option* option) const {
  std::string out;
  if (!option->get_option_text().empty()) return " " + option->get_option_text();
  if (option->get_type_size() != 0) {
    if (!option->get_type_name().empty()) out += " " + ValueLabel(option->get_type_name());
    if (option->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (!option->get_default_str().empty()) out += " (default " + option->get_default_str() + ")";
    if (option->get_required()) out += " (required)";
  }
  if (!option->get_envname().empty()) out += " (env " + option->get_envname() + ")";
  if (!option->get_excludes().empty()) {
    out += " (not with";
    for (const CLI::Option* other : option->get_excludes()) out += " " + WithoutFlagValues(other->get_name());
    out += ")";
  }
  return out;
}

}  // namespace tarmac::cli
