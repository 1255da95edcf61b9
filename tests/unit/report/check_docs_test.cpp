// SPDX-License-Identifier: MIT
#include "report/check_docs.hpp"

#include <gtest/gtest.h>

#include "checks/check.hpp"

namespace preflight {
namespace report_check_docs_test {
namespace {

TEST(CheckDocs, TheReadmeTableHasARowPerCheckInReportOrder) {
  const std::string table = readme_check_table().content;
  std::size_t at = 0;
  for (const CheckSpec* spec : all_checks()) {
    const std::string row = "| `" + std::string(spec->id) + "` | " + to_string(spec->scope) + " | ";
    const std::size_t found = table.find(row, at);
    ASSERT_NE(found, std::string::npos) << spec->id;
    at = found;
  }
  EXPECT_TRUE(table.starts_with("| id | scope | what it checks |\n|---|---|---|\n"));
}

TEST(CheckDocs, TheFindingCodeTableListsEveryDeclaredCode) {
  const std::string table = finding_code_table().content;
  for (const CheckSpec* spec : all_checks()) {
    for (const FindingSpec& f : spec->findings) {
      EXPECT_NE(table.find("| `" + std::string(f.code) + "` | " + to_string(f.status) + " | "), std::string::npos)
          << f.code;
    }
  }
  EXPECT_NE(table.find("`shm.capacity/too-small` | FAIL"), std::string::npos);
}

TEST(CheckDocs, ManEntriesAreEscapedRoff) {
  const std::string man = man_check_entries().content;
  EXPECT_NE(man.find(".TP\n.B shm.capacity\n(node) /dev/shm exists"), std::string::npos) << man;
  EXPECT_NE(man.find("\\-\\-expect\\-gpus"), std::string::npos) << "options are written with \\-";
  EXPECT_EQ(roff_escape(".x-y\\z"), "\\&.x\\-y\\\\z");
}

TEST(CheckDocs, GeneratedBlocksReplaceOnlyTheTextBetweenTheirMarkers) {
  GeneratedBlock b{"t", "<!-- b -->", "<!-- e -->", "new\n"};
  EXPECT_EQ(with_generated("head\n<!-- b -->\nold\nold\n<!-- e -->\ntail\n", b),
            "head\n<!-- b -->\nnew\n<!-- e -->\ntail\n");
  EXPECT_EQ(with_generated("<!-- b -->\n<!-- e -->", b), "<!-- b -->\nnew\n<!-- e -->");
  EXPECT_EQ(with_generated("no markers\n", b), std::nullopt);
  EXPECT_EQ(with_generated("<!-- e -->\n<!-- b -->\n", b), std::nullopt) << "out of order";
  EXPECT_EQ(with_generated("<!-- b -->\n<!-- e -->\n<!-- b -->\n", b), std::nullopt) << "twice";
  EXPECT_EQ(with_generated("x <!-- b -->\n<!-- e -->\n", b), std::nullopt) << "markers are whole lines";
}

}  // namespace
}  // namespace report_check_docs_test
}  // namespace preflight
