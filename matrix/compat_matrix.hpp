// SPDX-License-Identifier: MIT
// The compatibility matrix (matrix/*.tsv): CUDA toolkit -> minimum driver, minor-version
// compatibility minimums, driver branch -> CUDA it reports, CUDA -> compute-capability range, GPU
// architectures, and NCCL releases with known problems. The built-in copy is embedded in the binary;
// `--matrix DIR` replaces any of the files. Every file is validated when loaded: a malformed one
// throws MatrixError naming file and line ("matrix/cuda_toolkit_driver.tsv:14: ...").
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/version.hpp"

namespace preflight {

struct MatrixError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ToolkitDriverRow {  // cuda_toolkit_driver.tsv
  Version toolkit;         // full toolkit version: 12.4.0 (GA), 12.4.1 (Update 1)
  std::string release;     // "GA", "RC", "Update 1"
  Version min_driver;      // the driver bundled with the release
  std::string source;
  int line = 0;
  bool is_ga() const { return release == "GA"; }
};

struct MinorCompatRow {  // cuda_minor_compat.tsv
  unsigned major = 0;
  Version min_driver;
  std::string note;
  std::string source;
  int line = 0;
};

struct DriverBranchRow {  // driver_branch_cuda.tsv
  unsigned branch = 0;    // 535 for R535
  Version cuda;           // the CUDA version a driver of this branch reports
  std::string note;
  std::string source;
  int line = 0;
};

struct CcRangeRow {                // cuda_compute_capability.tsv
  Version cuda_from;               // major.minor, inclusive
  std::optional<Version> cuda_to;  // inclusive; nullopt = no upper bound yet
  Version min_cc;
  Version max_cc;
  std::string source;
  int line = 0;
  bool covers(const Version& cuda) const;  // compares major.minor only
};

struct GpuArchRow {  // gpu_arch.tsv
  Version cc;
  std::string arch;
  std::optional<Version> first_cuda;
  /// The first driver branch that supports the GPU (R570 for Blackwell 10.0); nullopt: the
  /// architecture predates every branch of driver_branch_cuda.tsv (R410), so all of them do
  /// (up to last_driver_branch).
  std::optional<unsigned> first_driver_branch;
  std::optional<unsigned> last_cuda_major;     // nullopt: still supported
  std::optional<unsigned> last_driver_branch;  // nullopt: still supported
  std::string source;
  int line = 0;
};

struct NcclIssueRow {  // nccl_known_issues.tsv
  std::string id;
  Version from;  // affected: from <= v < below
  Version below;
  std::string condition;  // "-" (always), env:NAME=VALUE, gpu:NAME, gdr, cuda-graphs
  std::string problem;
  std::string fix;
  std::string source;
  // Settings that avoid the problem: "env:NAME=VALUE" alternatives separated by '|'; a VALUE "^X"
  // matches a comma list that leaves X out ("^LL128", "LL,Simple"). "-" for none.
  std::string mitigation;
  int line = 0;
  bool affects(const Version& nccl) const { return from <= nccl && nccl < below; }
  /// The first alternative of `mitigation` that `get` (a variable's value, nullopt: unset) matches,
  /// as "NAME=VALUE"; "" when none does.
  std::string mitigated_by(const std::function<std::optional<std::string>(const std::string&)>& get) const;
};

struct TorchBuildRow {    // torch_cuda_builds.tsv
  Version cuda;           // major.minor
  std::string index_url;  // pip install torch --index-url <index_url>
  Version first_torch;
  std::string source;
  int line = 0;
};

class CompatMatrix {
 public:
  std::vector<ToolkitDriverRow> toolkit_driver;
  std::vector<MinorCompatRow> minor_compat;
  std::vector<DriverBranchRow> driver_branches;
  std::vector<CcRangeRow> cc_ranges;
  std::vector<GpuArchRow> gpu_archs;
  std::vector<NcclIssueRow> nccl_issues;
  std::vector<TorchBuildRow> torch_builds;

  /// The toolkit row for a CUDA version: the exact release for a full toolkit version ("12.4.1"),
  /// otherwise the GA row of its major.minor ("12.4", or a component version like "12.4.127").
  /// nullptr when the matrix has no row for that minor (12.7, or newer than the table).
  const ToolkitDriverRow* toolkit_row(const Version& cuda) const;
  /// toolkit_row(cuda)->min_driver.
  std::optional<Version> min_driver_for(const Version& cuda) const;
  /// The minor-version-compatibility minimum of a CUDA major family (nullopt: none, e.g. CUDA 10).
  std::optional<Version> minor_compat_min_driver(unsigned major) const;
  /// The branch row of a driver: the highest branch at or below the driver's major number.
  /// nullptr below the oldest branch, and for a driver newer than the newest branch (621 or 700
  /// when R620 is the newest: nothing is known of it, so nothing is extrapolated); a driver of the
  /// newest branch itself (620.x) is known.
  const DriverBranchRow* branch_for_driver(const Version& driver) const;
  /// branch_for_driver(driver)->cuda: the CUDA version such a driver reports (at least).
  std::optional<Version> cuda_reported_by_driver(const Version& driver) const;
  /// The newest branch of driver_branch_cuda.tsv (nullptr only for an empty table).
  const DriverBranchRow* newest_branch() const;
  /// The driver's major number is above the newest branch.
  bool newer_than_matrix(const Version& driver) const;
  /// The compute-capability range of a CUDA version (by major.minor); nullptr if none covers it.
  const CcRangeRow* cc_range_for(const Version& cuda) const;
  /// The architecture row of a compute capability (exact major.minor); nullptr if unknown.
  const GpuArchRow* arch_for_cc(const Version& cc) const;
  /// The newest published CUDA build of PyTorch whose CUDA is <= cuda (major.minor); nullptr if none.
  const TorchBuildRow* torch_build_for(const Version& cuda) const;
  /// Known problems of an NCCL release, in file order.
  std::vector<const NcclIssueRow*> nccl_issues_for(const Version& nccl) const;
};

/// The file names of the matrix, in load order.
const std::vector<std::string>& compat_matrix_files();

/// Parses one matrix file's text into `into`; `display_name` prefixes error messages
/// ("matrix/cuda_toolkit_driver.tsv"). Throws MatrixError. `file` is one of compat_matrix_files().
void parse_matrix_file(std::string_view file, std::string_view text, std::string_view display_name, CompatMatrix& into);

/// The embedded copy (validated; a malformed embedded file throws MatrixError: a unit test keeps
/// it from shipping).
CompatMatrix load_builtin();
/// The embedded copy, parsed once.
const CompatMatrix& builtin_compat_matrix();
/// Each file from DIR where it exists there, else the embedded copy. Throws MatrixError if DIR
/// is not a directory, a file cannot be read, or a file is malformed.
CompatMatrix load_from_dir(const std::string& dir);

}  // namespace preflight
