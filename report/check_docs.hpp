// SPDX-License-Identifier: MIT
// The documentation generated from the check table (checks/registry.cpp, each check's CheckSpec and
// findings): the README's check table, the man page's CHECKS entries and the finding codes of
// docs/checks.md. tools/preflight_docs.cpp writes them between markers in those files, and the test
// `docs.generated` fails when a committed file differs from what the table says.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace preflight {

/// One generated block: its name (in the markers), the lines that open and close it in a file
/// of that kind, and its content.
struct GeneratedBlock {
  std::string name;   // "checks-table"
  std::string begin;  // "<!-- BEGIN generated: checks-table (preflight-docs) -->"
  std::string end;
  std::string content;  // the lines between the markers, each ending in '\n'
};

/// The README's table: | id | scope | what it checks |, one row per check in report order.
GeneratedBlock readme_check_table();
/// docs/checks.md's table of every finding code: code, status, message template.
GeneratedBlock finding_code_table();
/// The man page's CHECKS entries: .TP, .B id, (scope) Title.
GeneratedBlock man_check_entries();

/// `document` with the text between `block`'s markers replaced by its content; nullopt when the
/// markers are missing, out of order or there more than once.
std::optional<std::string> with_generated(std::string_view document, const GeneratedBlock& block);

/// Roff text: backslashes doubled, '-' as "\-", a leading '.' or '\'' guarded with "\&".
std::string roff_escape(std::string_view text);

}  // namespace preflight
