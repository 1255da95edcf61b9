// SPDX-License-Identifier: MIT
// Pure parsers for the files that tell which CUDA runtime a job will load, without running Python:
// the toolkit's version.json / version.txt, torch/version.py, *.dist-info names and METADATA,
// versioned shared-library file names and /etc/ld.so.conf. No I/O here: probes/cuda_runtime_probe.cpp
// reads the files through the sysroot seam and hands the text in.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/probed.hpp"

namespace preflight {

/// /usr/local/cuda/version.json: cuda_cudart.version, else cuda.version ("12.6.77").
/// ParseError naming what is wrong (not JSON, no version, a version that is not dotted numbers).
Probed<std::string> parse_cuda_version_json(std::string_view text);

/// /usr/local/cuda/version.txt of older toolkits: "CUDA Version 10.2.89" -> "10.2.89".
Probed<std::string> parse_cuda_version_txt(std::string_view text);

/// What torch/version.py says. cuda is empty for a CPU (or ROCm) build: `cuda = None`.
struct TorchVersionPy {
  std::string version;  // __version__: "2.5.1+cu124"
  std::string cuda;     // cuda: "12.4", "" for None
  std::string hip;      // hip: "" for None
};
/// Accepts `__version__ = '2.5.1+cu124'`, `cuda: Optional[str] = '12.4'`, `cuda = '12.4'`,
/// `cuda = None` (either quote). ParseError for binary contents, a missing __version__ or cuda line,
/// or a cuda value that is not a dotted version.
Probed<TorchVersionPy> parse_torch_version_py(std::string_view text);

/// A distribution's normalised project name (PEP 503: lower case, runs of "-_." become "-").
std::string normalize_project_name(std::string_view name);

/// "nvidia_cuda_runtime_cu12-12.4.127.dist-info" -> {"nvidia-cuda-runtime-cu12", "12.4.127"}.
struct DistInfoName {
  std::string project;  // normalised
  std::string version;  // as written
};
std::optional<DistInfoName> parse_dist_info_name(std::string_view dir_name);

/// The first "Field: value" header of a METADATA file (the headers end at the first empty line).
std::optional<std::string> metadata_field(std::string_view metadata, std::string_view field);

/// Exact pins "name==version" among the Requires-Dist headers whose normalised name starts with
/// prefix ("nvidia-"): "Requires-Dist: nvidia-cuda-runtime-cu12==12.4.127; platform_system == ..."
/// -> "nvidia-cuda-runtime-cu12==12.4.127". In file order.
std::vector<std::string> requires_dist_pins(std::string_view metadata, std::string_view prefix);

/// The version part of a versioned shared-library name: ("libcudart.so.12.4.127", "libcudart.so")
/// -> "12.4.127"; "libcudart.so.12" -> "12"; "libcudart.so.11.0" -> "11.0". nullopt for the bare
/// development name "libcudart.so", another library, or a suffix that is not dotted numbers.
std::optional<std::string> soname_version(std::string_view file_name, std::string_view stem);

/// /etc/ld.so.conf (or one of its includes): directories in order, and include patterns
/// (relative ones as written; the caller resolves them against the including file's directory).
/// Comments (#...) and "hwcap" lines are ignored; directories may be separated by white space,
/// ':' or ','.
struct LdSoConf {
  std::vector<std::string> dirs;
  std::vector<std::string> includes;
};
LdSoConf parse_ld_so_conf(std::string_view text);

/// LD_LIBRARY_PATH split on ':' and ';', dropping empty entries and entries with $ORIGIN-style
/// tokens (which the loader expands per object, not per process).
std::vector<std::string> split_library_path(std::string_view value);

/// "python3.11" -> "3.11"; "python3" / "python" / anything else -> nullopt.
std::optional<std::string> python_version_from_name(std::string_view exe_name);

}  // namespace preflight
