// SPDX-License-Identifier: MIT
// A finding's parameters are data (a rank, a path, a value as the user wrote it), never a piece of a
// sentence such as "; alive and waiting: …" or " (why)": an optional part of a message is a template
// parameter (checks/finding_parts.hpp), spliced into the message. This file installs an observer
// (core/finding_observer.hpp) that fails whichever unit test makes a finding that breaks the rule, so
// every check's tests guard it.
// The observer also notes every code made. With PREFLIGHT_FINDING_COVERAGE set (CTest's
// source.finding_coverage runs every unit test in one process so), the run fails at its end when a
// finding some check declares with a status other than PASS was made by no test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <set>
#include <string>
#include <string_view>

#include "checks/check.hpp"
#include "core/finding_observer.hpp"
#include "core/verdict.hpp"

namespace preflight {
namespace core_finding_params_test {
namespace {

/// A piece of a sentence: it begins with the punctuation that joins it to the text before it, or
/// ends with what joins it to the text after it.
bool sentence_piece(std::string_view text) {
  if (text == ".") return true;
  for (std::string_view start : {"; ", ": ", ", ", " (", " [", ". "}) {
    if (text.starts_with(start)) return true;
  }
  for (std::string_view end : {": ", "; "}) {
    if (text.ends_with(end)) return true;
  }
  return false;
}

/// The names of the string parameters of `f` that are pieces of a sentence, with their values.
std::string sentence_pieces(const Finding& f) {
  std::string out;
  for (const auto& [name, value] : f.params.items()) {
    if (value.is_string() && sentence_piece(value.get_ref<const std::string&>())) {
      out += " {" + name + "} = \"" + value.get<std::string>() + "\"";
    }
  }
  return out;
}

/// The codes of the findings made so far (never destroyed: read at the end of the run).
std::set<std::string>& made_codes() {
  static auto* codes = new std::set<std::string>;
  return *codes;
}

/// Declared, but no check can make them: cuda.smoke reports its own helper crashing or running out
/// of time with findings of its own (cuda.smoke/crashed, cuda.smoke/hang), the shared rows every GPU
/// check declares notwithstanding.
constexpr std::string_view kUnreachable[] = {"cuda.smoke/helper-crashed", "cuda.smoke/helper-hung"};

/// At the end of a whole run: every declared non-PASS finding was made by some test.
class FindingCoverage : public ::testing::Environment {
 public:
  void TearDown() override {
    if (std::getenv("PREFLIGHT_FINDING_COVERAGE") == nullptr) return;
    std::string unmade;
    int declared = 0;
    for (const CheckSpec* spec : all_checks()) {
      for (const FindingSpec& f : spec->findings) {
        if (f.status == Status::Pass) continue;
        ++declared;
        const std::string code(f.code);
        if (made_codes().count(code) != 0) continue;
        if (std::find(std::begin(kUnreachable), std::end(kUnreachable), f.code) != std::end(kUnreachable)) continue;
        unmade += "\n  " + code + " (" + to_string(f.status) + ")";
      }
    }
    EXPECT_GT(declared, 0);
    EXPECT_TRUE(unmade.empty()) << "findings no unit test makes (each check's tests make each of its non-PASS "
                                   "findings happen):"
                                << unmade;
  }
};
::testing::Environment* const kCoverage = ::testing::AddGlobalTestEnvironment(new FindingCoverage);

void fail_on_sentence_pieces(const Finding& f) {
  made_codes().insert(f.code);
  if (const std::string pieces = sentence_pieces(f); !pieces.empty()) {
    ADD_FAILURE() << f.code << " has parameters that are pieces of its sentence (make them template parameters, "
                  << "checks/finding_parts.hpp):" << pieces;
  }
}

// Installed before any test runs: every finding every unit test makes is checked.
const bool kGuardInstalled = (set_finding_observer(&fail_on_sentence_pieces), true);

TEST(FindingParams, TheGuardIsInstalledForEveryTest) {
  EXPECT_TRUE(kGuardInstalled);
  const FindingObserver current = set_finding_observer(nullptr);
  EXPECT_EQ(current, &fail_on_sentence_pieces);
  set_finding_observer(current);
}

TEST(FindingParams, PiecesOfASentenceAreTold) {
  for (std::string_view piece : {"; alive and waiting: rank 2", " (the gather expired)", ": no GPU", ", 400 Gb/sec",
                                 " [driver helper]", "rank 2: ", "helper: ", "."}) {
    EXPECT_TRUE(sentence_piece(piece)) << piece;
  }
  // Data, even where it starts or ends oddly: a user's value as written, a path, a count with its unit.
  for (std::string_view data :
       {"", " 29500", ",eth0", "NCCL_IB_TIMEOUT ", "rank 2 (gpu-a, pid 1002, last phase barrier)", "/dev/shm", "8 GPUs",
        "the gather expired"}) {
    EXPECT_FALSE(sentence_piece(data)) << data;
  }
}

TEST(FindingParams, AFindingWithAPieceOfASentenceIsCaught) {
  static std::string seen;
  seen.clear();
  const FindingObserver guard = set_finding_observer([](const Finding& f) { seen += sentence_pieces(f); });
  (void)Verdict::coded(Status::Warn, "a.b/c", "x{note}", "", {{"note", " (why)"}, {"rank", 3}});
  EXPECT_EQ(seen, " {note} = \" (why)\"");
  seen.clear();
  // The same part as a template parameter leaves data only: nothing to tell.
  (void)Verdict::coded(Status::Warn, "a.b/c", "x{note}", "", {{"note", template_param(" ({why})")}, {"why", "why"}});
  VerdictBuilder b;
  b.add(Status::Warn, "a.b/d", "y{note}", "", {{"note", template_param("")}});
  EXPECT_EQ(seen, "");
  b.add(Status::Warn, "a.b/e", "z{who}", "", {{"who", "rank 1: "}});
  EXPECT_EQ(seen, " {who} = \"rank 1: \"");
  set_finding_observer(guard);
}

}  // namespace
}  // namespace core_finding_params_test
}  // namespace preflight
