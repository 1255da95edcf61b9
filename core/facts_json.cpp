// SPDX-License-Identifier: MIT
// The JSON conversions of the fact structs (core/facts.hpp, core/facts/*.hpp; the GPU stack's are
// in core/facts_gpu_json.cpp), defined once here: the keys are the field names, a missing key keeps
// the field's default.
#include "core/facts.hpp"

namespace preflight {

#define PREFLIGHT_FACT(Type, ...) PREFLIGHT_JSON_DEFINE(Type, __VA_ARGS__)
#include "core/facts_fields.inc"
#undef PREFLIGHT_FACT

}  // namespace preflight
