// SPDX-License-Identifier: MIT
// The compatibility-matrix files that --matrix DIR replaces (matrix/*.tsv): parse_matrix_file,
// which throws MatrixError for anything malformed, then every lookup and every check over a matrix
// holding what it accepted. The first input byte picks the file, the rest is its text.
#include "matrix/compat_matrix.hpp"
#include "fuzz_checks.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const CompatMatrix builtin = load_builtin();
  static const JobFacts job = job_fixture::job(1, 2);
  const std::vector<std::string>& files = compat_matrix_files();
  const std::string& file = files[data[0] % files.size()];
  CompatMatrix m = builtin;
  try {
    parse_matrix_file(file, fuzz::text(data + 1, size - 1), "matrix/" + file, m);
  } catch (const MatrixError& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with("matrix/" + file));
    return 0;
  }
  for (const char* text : {"12.4", "12.4.1", "535.104.05", "9.0", "2.19.3", "580", "1"}) {
    const Version v = *Version::parse(text);
    (void)m.toolkit_row(v);
    (void)m.min_driver_for(v);
    (void)m.minor_compat_min_driver(v.major());
    (void)m.branch_for_driver(v);
    (void)m.cuda_reported_by_driver(v);
    (void)m.cc_range_for(v);
    (void)m.arch_for_cc(v);
    (void)m.nccl_issues_for(v);
  }
  fuzz::run_all_checks(job, Options{}, &m, size);
  return 0;
}
