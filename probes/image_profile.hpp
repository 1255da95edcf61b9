// SPDX-License-Identifier: MIT
// The image profile (`--profile image`: a container image is being built) expects no driver and no
// GPU, so the probes of the driver's facts do not run there: their fields say why instead.
#pragma once

#include <string>
#include <string_view>

#include "core/options.hpp"
#include "core/probed.hpp"

namespace preflight {

inline constexpr std::string_view kNoDriverInImage = "image profile: no driver expected";

/// Under the image profile, sets every field to Unsupported `why` and returns true; otherwise
/// touches nothing and returns false. A probe of the driver's facts starts with
/// `if (not_in_image(options, kNoDriverInImage, d.field)) return;`.
template <typename... T>
bool not_in_image(const Options& options, std::string_view why, Probed<T>&... fields) {
  if (options.profile != Profile::Image) return false;
  ((fields = Probed<T>::error(ProbeErrc::Unsupported, std::string(why))), ...);
  return true;
}

}  // namespace preflight
