// SPDX-License-Identifier: MIT
// A seam for the unit tests: every coded finding a check makes (Verdict::coded, VerdictBuilder::add)
// passes by the observer, where one is set. The unit tests set one that fails a test whose finding
// carries a piece of a sentence as a parameter (tests/unit/core/finding_params_test.cpp). The
// product sets none.
#pragma once

#include "core/verdict.hpp"

namespace preflight {

using FindingObserver = void (*)(const Finding& finding);

/// Sets the observer (nullptr: none) and returns the one it replaces.
FindingObserver set_finding_observer(FindingObserver observer);

}  // namespace preflight
