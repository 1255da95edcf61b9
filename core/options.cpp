// SPDX-License-Identifier: MIT
#include "core/options.hpp"

namespace preflight {

const char* to_string(Profile p) {
  switch (p) {
    case Profile::Node: return "node";
    case Profile::Job: return "job";
    case Profile::Image: return "image";
  }
  return "node";
}

const char* to_string(Format f) {
  switch (f) {
    case Format::Text: return "text";
    case Format::Json: return "json";
    case Format::Junit: return "junit";
    case Format::Prometheus: return "prometheus";
  }
  return "text";
}

}  // namespace preflight
