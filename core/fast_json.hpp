// SPDX-License-Identifier: MIT
// A fast reader of the facts in JSON results, over simdjson's DOM (built with simdjson only:
// PREFLIGHT_HAVE_SIMDJSON). `preflight merge` reads thousands of result files; nlohmann::json's DOM
// and the conversions from it spend most of a merge's time. This reader converts simdjson's parse
// straight into the fact structs, made from the same field lists as their nlohmann conversions
// (core/facts_fields.inc, core/facts_gpu_fields.inc), and decides only what it is sure of: where
// the nlohmann path could answer otherwise (a value of an unexpected type, a number out of range,
// anything it would refuse), it throws GiveUp and the caller reads the text the nlohmann way.
#pragma once

#ifdef PREFLIGHT_HAVE_SIMDJSON

#include <simdjson.h>

#include <nlohmann/json.hpp>

#include "core/facts.hpp"

namespace preflight::fast_json {

/// This reader does not decide this input: read it with nlohmann::json.
struct GiveUp {};

/// `element` as RankFacts, exactly as from_json(nlohmann::json::parse(its text)) reads it after
/// float_out_of_range() found nothing. Throws GiveUp.
void read(const simdjson::dom::element& element, RankFacts& out);

/// `element` as nlohmann::json parses the same text (non-negative integers unsigned, as its
/// parser makes them). Throws GiveUp for a number nlohmann::json would read otherwise.
nlohmann::json to_nlohmann(const simdjson::dom::element& element);

/// The string at `element`, or GiveUp; likewise an object, an array, an int (in range), a list of
/// strings.
std::string_view text(const simdjson::dom::element& element);
simdjson::dom::object object_of(const simdjson::dom::element& element);
simdjson::dom::array array_of(const simdjson::dom::element& element);
int int_of(const simdjson::dom::element& element);
std::vector<std::string> strings_of(const simdjson::dom::element& element);

}  // namespace preflight::fast_json

#endif
