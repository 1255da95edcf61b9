// SPDX-License-Identifier: MIT
#include "report/check_docs.hpp"

#include <cctype>

#include "checks/check.hpp"

namespace preflight {
namespace {

GeneratedBlock markdown_block(std::string name) {
  GeneratedBlock b;
  b.begin = "<!-- BEGIN generated: " + name +
            " (preflight-docs; edit checks/*.cpp, then `cmake --build build --target update-docs`) -->";
  b.end = "<!-- END generated: " + name + " -->";
  b.name = std::move(name);
  return b;
}

/// A table cell: pipes escaped, so a title or template with '|' cannot split the row.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

GeneratedBlock readme_check_table() {
  GeneratedBlock b = markdown_block("checks-table");
  b.content = "| id | scope | what it checks |\n|---|---|---|\n";
  for (const CheckSpec* spec : all_checks()) {
    b.content += "| `" + std::string(spec->id) + "` | " + to_string(spec->scope) + " | " + cell(spec->title) + " |\n";
  }
  return b;
}

GeneratedBlock finding_code_table() {
  GeneratedBlock b = markdown_block("finding-codes");
  b.content =
      "| code | status | message (`{name}`: a parameter, in the JSON result's `findings[].params`) |\n|---|---|---|\n";
  for (const CheckSpec* spec : all_checks()) {
    for (const FindingSpec& f : spec->findings) {
      b.content += "| `" + std::string(f.code) + "` | " + to_string(f.status) + " | " + cell(f.message) + " |\n";
    }
  }
  return b;
}

std::string roff_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
  return out;
}

GeneratedBlock man_check_entries() {
  GeneratedBlock b;
  b.name = "checks-man";
  b.begin = ".\\\" BEGIN generated: checks-man (preflight-docs; edit checks/*.cpp, then the update-docs target)";
  b.end = ".\\\" END generated: checks-man";
  for (const CheckSpec* spec : all_checks()) {
    std::string title(spec->title);
    if (!title.empty()) title.front() = static_cast<char>(std::toupper(static_cast<unsigned char>(title.front())));
    if (!title.ends_with('.')) title += '.';
    b.content += ".TP\n.B " + roff_escape(spec->id) + "\n(" + to_string(spec->scope) + ") " + roff_escape(title) + "\n";
  }
  return b;
}

std::optional<std::string> with_generated(std::string_view document, const GeneratedBlock& block) {
  // Markers are whole lines.
  const auto line_at = [&](std::string_view marker) -> std::optional<std::size_t> {
    std::optional<std::size_t> found;
    std::size_t pos = 0;
    while (pos < document.size()) {
      std::size_t eol = document.find('\n', pos);
      if (eol == std::string_view::npos) eol = document.size();
      if (document.substr(pos, eol - pos) == marker) {
        if (found) return std::nullopt;  // twice: ambiguous
        found = pos;
      }
      pos = eol + 1;
    }
    return found;
  };
  const std::optional<std::size_t> begin = line_at(block.begin);
  const std::optional<std::size_t> end = line_at(block.end);
  if (!begin || !end || *end < *begin) return std::nullopt;
  const std::size_t after_begin = *begin + block.begin.size() + 1;
  if (after_begin > *end) return std::nullopt;
  std::string out(document.substr(0, after_begin));
  out += block.content;
  out += document.substr(*end);
  return out;
}

}  // namespace preflight
