// SPDX-License-Identifier: MIT
// byte_kind(): the words for a byte in messages that must not quote a file's content.
#include "core/byte_kind.hpp"

namespace preflight {
namespace {

const char* punctuation_kind(unsigned char c) {
  switch (c) {
    case '{':
    case '}': return "a brace";
    case '[':
    case ']': return "a bracket";
    case '"':
    case '\'': return "a quotation mark";
    case ',': return "a comma";
    case ':': return "a colon";
    case '=': return "an equals sign";
    case '#': return "a number sign";
    default: return "punctuation";
  }
}

}  // namespace

std::string byte_kind(unsigned char c) {
  if (c == 0) return "a NUL byte";
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return "whitespace";
  if (c < 0x20 || c == 0x7F) return "a control byte";
  if (c >= 0x80) return "a non-ASCII byte";
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return "a letter";
  if (c >= '0' && c <= '9') return "a digit";
  return punctuation_kind(c);
}

}  // namespace preflight
