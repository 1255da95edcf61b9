// SPDX-License-Identifier: MIT
// What kind of byte a reader stopped at, in words ("a letter", "a control byte"), for messages
// about files preflight was pointed at (--config, merge's inputs, --matrix): a message names the
// place and the kind of what was found there, never the bytes themselves.
#pragma once

#include <string>

namespace preflight {

/// "a letter", "a digit", "a NUL byte", "a control byte", "a non-ASCII byte", "whitespace",
/// "a quotation mark", "a brace", … : never the byte itself.
std::string byte_kind(unsigned char c);

}  // namespace preflight
