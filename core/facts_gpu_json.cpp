// SPDX-License-Identifier: MIT
// The JSON conversions of the GPU stack's fact structs (core/facts/gpu.hpp), defined once here.
#include "core/facts/gpu.hpp"

namespace preflight {

#define PREFLIGHT_FACT(Type, ...) PREFLIGHT_JSON_DEFINE(Type, __VA_ARGS__)
#include "core/facts_gpu_fields.inc"
#undef PREFLIGHT_FACT

}  // namespace preflight
