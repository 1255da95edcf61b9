// SPDX-License-Identifier: MIT
// The compatibility matrix: spot values pinned so a bad edit of matrix/*.tsv fails CI, the
// validator's messages (file:line) for malformed files, and --matrix DIR overrides.
#include "matrix/compat_matrix.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "matrix/embedded.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace matrix_compat_matrix_test {
namespace {

Version v(const char* text) { return Version::parse(text).value(); }

std::string min_driver(const char* cuda) {
  const std::optional<Version> d = builtin_compat_matrix().min_driver_for(v(cuda));
  return d ? d->str() : "none";
}

TEST(CompatMatrixBuiltin, LoadsAndEveryFileHasRows) {
  const CompatMatrix m = load_builtin();
  EXPECT_GE(m.toolkit_driver.size(), 56u);
  EXPECT_EQ(m.minor_compat.size(), 3u);
  EXPECT_GE(m.driver_branches.size(), 29u);
  EXPECT_GE(m.cc_ranges.size(), 9u);
  EXPECT_GE(m.gpu_archs.size(), 24u);
  EXPECT_GE(m.nccl_issues.size(), 7u);
  for (const std::string& file : compat_matrix_files()) EXPECT_FALSE(embedded_matrix_file(file).empty()) << file;
}

TEST(CompatMatrixBuiltin, ToolkitMinimumDrivers) {
  EXPECT_EQ(min_driver("12.4"), "550.54.14");  // 12.4 GA
  EXPECT_EQ(min_driver("12.4.0"), "550.54.14");
  EXPECT_EQ(min_driver("12.4.1"), "550.54.15");    // 12.4 Update 1
  EXPECT_EQ(min_driver("12.4.127"), "550.54.14");  // a component version: the GA row of 12.4
  EXPECT_EQ(min_driver("13.0"), "580.65.06");
  EXPECT_EQ(min_driver("13.0.2"), "580.95.05");
  EXPECT_EQ(min_driver("13.2.2"), "595.71.05");
  EXPECT_EQ(min_driver("12.8"), "570.26");
  EXPECT_EQ(min_driver("12.8.1"), "570.124.06");
  EXPECT_EQ(min_driver("12.2.2"), "535.104.05");
  EXPECT_EQ(min_driver("12.0"), "525.60.13");
  EXPECT_EQ(min_driver("11.8"), "520.61.05");
  EXPECT_EQ(min_driver("11.0"), "450.51.05");  // 11.0.2 is the GA; 11.0.1 was the RC
  EXPECT_EQ(min_driver("11.0.1"), "450.36.06");
  EXPECT_EQ(min_driver("10.2"), "440.33");
  EXPECT_EQ(min_driver("10.0"), "410.48");
  EXPECT_EQ(min_driver("12.7"), "none");  // no 12.7 toolkit was released
  EXPECT_EQ(min_driver("9.2"), "none");
  const ToolkitDriverRow* row = builtin_compat_matrix().toolkit_row(v("12.6.3"));
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->release, "Update 3");
  EXPECT_TRUE(row->source.starts_with("https://docs.nvidia.com/"));
}

TEST(CompatMatrixBuiltin, MinorVersionCompatibilityMinimums) {
  const CompatMatrix& m = builtin_compat_matrix();
  EXPECT_EQ(m.minor_compat_min_driver(11)->str(), "450.80.02");
  EXPECT_EQ(m.minor_compat_min_driver(12)->str(), "525.60.13");
  EXPECT_EQ(m.minor_compat_min_driver(13)->str(), "580");
  EXPECT_FALSE(m.minor_compat_min_driver(10));
  EXPECT_GE(v("580.65.06"), *m.minor_compat_min_driver(13));
  EXPECT_LT(v("575.57.08"), *m.minor_compat_min_driver(13));
}

TEST(CompatMatrixBuiltin, CudaReportedByDriver) {
  const CompatMatrix& m = builtin_compat_matrix();
  const auto reported = [&](const char* driver) {
    const std::optional<Version> c = m.cuda_reported_by_driver(v(driver));
    return c ? c->str() : "none";
  };
  EXPECT_EQ(reported("535.104.05"), "12.2");
  EXPECT_EQ(reported("550.54.14"), "12.4");
  EXPECT_EQ(reported("565.57.01"), "12.7");
  EXPECT_EQ(reported("570.124.06"), "12.8");
  EXPECT_EQ(reported("580.95.05"), "13.0");
  EXPECT_EQ(reported("595.71.05"), "13.2");
  EXPECT_EQ(reported("470.82.01"), "11.4");
  EXPECT_EQ(reported("450.80.02"), "11.0");
  EXPECT_EQ(reported("620.70.06"), "13.5");
  EXPECT_EQ(reported("620"), "13.5");  // the newest branch itself is known
  EXPECT_EQ(reported("390.157"), "none");
  EXPECT_EQ(m.branch_for_driver(v("537.13"))->branch, 535u);  // between branches: the one below
}

TEST(CompatMatrixBuiltin, DriversNewerThanTheNewestBranchAreNotExtrapolated) {
  const CompatMatrix& m = builtin_compat_matrix();
  ASSERT_NE(m.newest_branch(), nullptr);
  EXPECT_EQ(m.newest_branch()->branch, 620u);
  for (const char* driver : {"621", "621.10.01", "700", "700.1.2", "999"}) {
    EXPECT_TRUE(m.newer_than_matrix(v(driver))) << driver;
    EXPECT_EQ(m.branch_for_driver(v(driver)), nullptr) << driver;
    EXPECT_FALSE(m.cuda_reported_by_driver(v(driver))) << driver;
  }
  for (const char* driver : {"620", "620.70.06", "620.999.99", "535.104.05", "390.157"}) {
    EXPECT_FALSE(m.newer_than_matrix(v(driver))) << driver;
  }
}

TEST(CompatMatrixBuiltin, ComputeCapabilityRanges) {
  const CompatMatrix& m = builtin_compat_matrix();
  const CcRangeRow* cuda13 = m.cc_range_for(v("13.0"));
  ASSERT_NE(cuda13, nullptr);
  EXPECT_EQ(cuda13->min_cc.str(), "7.5");  // CUDA 13 drops CC < 7.5
  EXPECT_LT(v("7.0"), cuda13->min_cc);     // V100: unsupported
  EXPECT_GE(v("7.5"), cuda13->min_cc);     // T4: supported
  EXPECT_EQ(m.cc_range_for(v("13.2.1")), cuda13);
  EXPECT_EQ(m.cc_range_for(v("13.5")), cuda13);  // open-ended
  const CcRangeRow* cuda124 = m.cc_range_for(v("12.4.127"));
  ASSERT_NE(cuda124, nullptr);
  EXPECT_EQ(cuda124->min_cc.str(), "5.0");
  EXPECT_EQ(cuda124->max_cc.str(), "9.0");  // Blackwell (10.0) needs 12.8
  EXPECT_EQ(m.cc_range_for(v("12.8"))->max_cc.str(), "12.0");
  EXPECT_EQ(m.cc_range_for(v("11.8"))->min_cc.str(), "3.5");
  EXPECT_EQ(m.cc_range_for(v("11.8"))->max_cc.str(), "9.0");
  EXPECT_EQ(m.cc_range_for(v("10.2"))->min_cc.str(), "3.0");
  EXPECT_EQ(m.cc_range_for(v("9.0")), nullptr);
}

TEST(CompatMatrixBuiltin, GpuArchitectures) {
  const CompatMatrix& m = builtin_compat_matrix();
  const GpuArchRow* volta = m.arch_for_cc(v("7.0"));
  ASSERT_NE(volta, nullptr);
  EXPECT_EQ(volta->arch, "Volta");
  EXPECT_EQ(volta->last_cuda_major, 12u);
  EXPECT_EQ(volta->last_driver_branch, 580u);
  EXPECT_EQ(m.arch_for_cc(v("3.7"))->last_driver_branch, 470u);  // Kepler
  const GpuArchRow* hopper = m.arch_for_cc(v("9.0"));
  ASSERT_NE(hopper, nullptr);
  EXPECT_EQ(hopper->arch, "Hopper");
  EXPECT_FALSE(hopper->last_driver_branch);
  EXPECT_EQ(hopper->first_cuda->str(), "11.8");
  EXPECT_EQ(m.arch_for_cc(v("10.0"))->first_cuda->str(), "12.8");
  EXPECT_EQ(m.arch_for_cc(v("8.8")), nullptr);
}

TEST(CompatMatrixBuiltin, FirstDriverBranchPerArchitecture) {
  const CompatMatrix& m = builtin_compat_matrix();
  const auto first = [&](const char* cc) {
    const GpuArchRow* row = m.arch_for_cc(v(cc));
    if (row == nullptr) return std::string("no row");
    return row->first_driver_branch ? "R" + std::to_string(*row->first_driver_branch) : std::string("-");
  };
  EXPECT_EQ(first("7.0"), "-");  // Volta predates R410, the oldest branch of the table
  EXPECT_EQ(first("3.7"), "-");
  EXPECT_EQ(first("7.5"), "R410");
  EXPECT_EQ(first("8.0"), "R450");
  EXPECT_EQ(first("8.6"), "R455");
  EXPECT_EQ(first("8.9"), "R520");
  EXPECT_EQ(first("9.0"), "R520");
  EXPECT_EQ(first("10.0"), "R570");
  EXPECT_EQ(first("12.0"), "R570");
  EXPECT_EQ(first("10.3"), "R575");
  EXPECT_EQ(first("12.1"), "R575");
  // Every first branch is the first branch whose CUDA reaches the architecture's first CUDA.
  for (const GpuArchRow& row : m.gpu_archs) {
    if (!row.first_driver_branch) {
      if (row.first_cuda) {
        EXPECT_LT(*row.first_cuda, m.driver_branches.front().cuda) << row.cc.str();
      }
      continue;
    }
    ASSERT_TRUE(row.first_cuda) << row.cc.str();
    const DriverBranchRow* branch = m.branch_for_driver(Version::of({*row.first_driver_branch}));
    ASSERT_NE(branch, nullptr) << row.cc.str();
    EXPECT_EQ(branch->branch, *row.first_driver_branch) << row.cc.str() << ": not a branch of the table";
    EXPECT_GE(branch->cuda, *row.first_cuda) << row.cc.str();
    for (const DriverBranchRow& older : m.driver_branches) {
      if (older.branch < branch->branch) {
        EXPECT_LT(older.cuda, *row.first_cuda) << row.cc.str() << " R" << older.branch;
      }
    }
  }
}

TEST(CompatMatrixBuiltin, NcclKnownIssues) {
  const CompatMatrix& m = builtin_compat_matrix();
  const auto ids = [&](const char* nccl) {
    std::string out;
    for (const NcclIssueRow* r : m.nccl_issues_for(v(nccl))) out += (out.empty() ? "" : ",") + r->id;
    return out;
  };
  EXPECT_EQ(ids("2.19.3"), "nccl-2.19-cumem-deadlock,nccl-cumem-cuda-graphs");
  EXPECT_EQ(ids("2.20.5"), "nccl-cumem-cuda-graphs");
  EXPECT_EQ(ids("2.22.3"), "");
  EXPECT_EQ(ids("2.26.2"), "nccl-2.26.2-cumem-off-hang");
  EXPECT_EQ(ids("2.28.9"), "");
  EXPECT_EQ(ids("2.18.1"), "nccl-2.18.1-h100-ll128,nccl-2.18.1-sharp-bf16");
  EXPECT_EQ(ids("2.30.4"), "nccl-2.30.4-nvls-gb10");
  EXPECT_EQ(m.nccl_issues_for(v("2.26.2")).front()->condition, "env:NCCL_CUMEM_ENABLE=0");
}

// ---- malformed files -------------------------------------------------------------------------

std::string parse_error(const std::string& file, const std::string& text) {
  CompatMatrix m;
  try {
    parse_matrix_file(file, text, "matrix/" + file, m);
  } catch (const MatrixError& e) {
    return e.what();
  }
  return "no error";
}

const std::string kToolkitHeader = "# comment\ntoolkit\trelease\tmin_driver\tsource\n";
const std::string kUrl = "https://docs.nvidia.com/cuda/";

TEST(CompatMatrixValidation, BadVersionNamesFileAndLine) {
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + "12.4.0\tGA\t550.54.1x\t" + kUrl + "\n"),
            "matrix/cuda_toolkit_driver.tsv:3: column 3 (min_driver) is not a driver version");
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + "12.4\tGA\t550.54.14\t" + kUrl + "\n"),
            "matrix/cuda_toolkit_driver.tsv:3: column 1 (toolkit) is not a CUDA toolkit version (major.minor.patch)");
  EXPECT_EQ(parse_error("cuda_compute_capability.tsv",
                        "cuda_from\tcuda_to\tmin_cc\tmax_cc\tsource\n13.0\t-\t7\t12.1\t" + kUrl + "\n"),
            "matrix/cuda_compute_capability.tsv:2: column 3 (min_cc) is not a compute capability (major.minor)");
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + "12.4.0\tBeta\t550.54.14\t" + kUrl + "\n"),
            "matrix/cuda_toolkit_driver.tsv:3: column 2 (release) is not a release label (GA, RC or Update N)");
}

TEST(CompatMatrixValidation, GpuArchFirstDriverBranch) {
  const std::string header = "cc\tarch\tfirst_cuda\tfirst_driver_branch\tlast_cuda_major\tlast_driver_branch\tsource\n";
  EXPECT_EQ(parse_error("gpu_arch.tsv", header + "10.0\tBlackwell\t12.8\tR570\t-\t-\t" + kUrl + "\n"),
            "matrix/gpu_arch.tsv:2: column 4 (first_driver_branch) is not a driver branch (or -)");
  EXPECT_EQ(parse_error("gpu_arch.tsv", header + "7.0\tVolta\t9.0\t590\t12\t580\t" + kUrl + "\n"),
            "matrix/gpu_arch.tsv:2: last driver branch R580 is older than the first, R590");
  // The old five-column layout is refused with the header it expects.
  EXPECT_TRUE(parse_error("gpu_arch.tsv", "cc\tarch\tfirst_cuda\tlast_cuda_major\tlast_driver_branch\tsource\n")
                  .starts_with("matrix/gpu_arch.tsv:1: expected the header"));
  CompatMatrix m;
  parse_matrix_file("gpu_arch.tsv", header + "10.0\tBlackwell\t12.8\t570\t-\t-\t" + kUrl + "\n", "gpu_arch.tsv", m);
  ASSERT_EQ(m.gpu_archs.size(), 1u);
  EXPECT_EQ(m.gpu_archs[0].first_driver_branch, 570u);
  EXPECT_FALSE(m.gpu_archs[0].last_driver_branch);
}

TEST(CompatMatrixValidation, MissingSourceUrl) {
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + "12.4.0\tGA\t550.54.14\t-\n"),
            "matrix/cuda_toolkit_driver.tsv:3: no source URL (the last column must be an http(s) URL without spaces)");
  EXPECT_EQ(
      parse_error("cuda_minor_compat.tsv", "major\tmin_driver\tnote\tsource\n12\t525.60.13\t-\tdocs.nvidia.com\n"),
      "matrix/cuda_minor_compat.tsv:2: no source URL (the last column must be an http(s) URL without spaces)");
}

TEST(CompatMatrixValidation, DuplicateAndUnsortedRows) {
  const std::string row = "12.4.0\tGA\t550.54.14\t" + kUrl + "\n";
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + row + row),
            "matrix/cuda_toolkit_driver.tsv:4: duplicate CUDA toolkit 12.4.0 (also on line 3)");
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + row + "12.3.0\tGA\t545.23.06\t" + kUrl + "\n"),
            "matrix/cuda_toolkit_driver.tsv:4: CUDA toolkit 12.3.0 is out of order (rows must be ascending)");
  EXPECT_EQ(
      parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + row + "12.4.1\tUpdate 1\t550.54.13\t" + kUrl + "\n"),
      "matrix/cuda_toolkit_driver.tsv:4: driver 550.54.13 is older than the 550.54.14 of the earlier release 12.4.0");
  const std::string branch = "branch\tcuda\tnote\tsource\n535\t12.2\t-\t" + kUrl + "\n";
  EXPECT_EQ(parse_error("driver_branch_cuda.tsv", branch + "535\t12.3\t-\t" + kUrl + "\n"),
            "matrix/driver_branch_cuda.tsv:3: duplicate driver branch 535 (also on line 2)");
  const std::string nccl = "id\tfrom\tbelow\tcondition\tproblem\tfix\tmitigation\tsource\n";
  const std::string issue = "a\t2.19.0\t2.20.0\t-\thang\tupgrade\t-\t" + kUrl + "\n";
  EXPECT_EQ(parse_error("nccl_known_issues.tsv", nccl + issue + issue),
            "matrix/nccl_known_issues.tsv:3: duplicate id (also on line 2)");
  EXPECT_EQ(parse_error("nccl_known_issues.tsv", nccl + "a\t2.19.0\t2.19.0\t-\thang\tupgrade\t-\t" + kUrl + "\n"),
            "matrix/nccl_known_issues.tsv:2: range 2.19.0 <= v < 2.19.0 is empty");
  EXPECT_EQ(
      parse_error("nccl_known_issues.tsv", nccl + "a\t2.19.0\t2.20.0\tsometimes\thang\tupgrade\t-\t" + kUrl + "\n"),
      "matrix/nccl_known_issues.tsv:2: column 4 (condition) is not a condition (-, env:NAME=VALUE, gpu:NAME, gdr, "
      "cuda-graphs)");
  EXPECT_EQ(
      parse_error("nccl_known_issues.tsv", nccl + "a\t2.19.0\t2.20.0\t-\thang\tupgrade\tNCCL_PROTO\t" + kUrl + "\n"),
      "matrix/nccl_known_issues.tsv:2: column 7 (mitigation) is not a mitigation (-, or env:NAME=VALUE alternatives "
      "separated by '|')");
  const std::string cc = "cuda_from\tcuda_to\tmin_cc\tmax_cc\tsource\n12.0\t12.7\t5.0\t9.0\t" + kUrl + "\n";
  EXPECT_EQ(parse_error("cuda_compute_capability.tsv", cc + "12.5\t12.8\t5.0\t12.0\t" + kUrl + "\n"),
            "matrix/cuda_compute_capability.tsv:3: CUDA 12.5 overlaps or precedes the range on line 2 (rows must be "
            "ascending)");
}

TEST(CompatMatrixValidation, WrongColumnsAndHeader) {
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + "12.4.0\tGA\t550.54.14\n"),
            "matrix/cuda_toolkit_driver.tsv:3: expected 4 tab-separated columns, got 3");
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + "12.4.0 GA\t550.54.14\t" + kUrl + "\n"),
            "matrix/cuda_toolkit_driver.tsv:3: expected 4 tab-separated columns, got 3");
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader + "12.4.0\t\t550.54.14\t" + kUrl + "\n"),
            "matrix/cuda_toolkit_driver.tsv:3: column 2 is empty or has surrounding spaces (write '-' for none)");
  EXPECT_EQ(parse_error("cuda_minor_compat.tsv", "# x\nmajor\tdriver\tnote\tsource\n"),
            "matrix/cuda_minor_compat.tsv:2: expected the header 'major\\x09min_driver\\x09note\\x09source', found "
            "another line");
}

TEST(CompatMatrixValidation, EmptyFiles) {
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", ""),
            "matrix/cuda_toolkit_driver.tsv:1: expected the header 'toolkit\\x09release\\x09min_driver\\x09source', "
            "found end of file");
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", "# only comments\n# here\n"),
            "matrix/cuda_toolkit_driver.tsv:2: expected the header 'toolkit\\x09release\\x09min_driver\\x09source', "
            "found end of file");
  EXPECT_EQ(parse_error("cuda_toolkit_driver.tsv", kToolkitHeader), "matrix/cuda_toolkit_driver.tsv:2: no rows");
}

// ---- --matrix DIR ------------------------------------------------------------------------------

class CompatMatrixDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/preflight-matrix-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    m_dir = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(m_dir); }
  void write(const std::string& name, const std::string& text) { std::ofstream(m_dir + "/" + name) << text; }
  std::string m_dir;
};

TEST_F(CompatMatrixDir, EmptyDirFallsBackToTheBuiltInCopy) {
  const CompatMatrix m = load_from_dir(m_dir);
  EXPECT_EQ(m.toolkit_driver.size(), builtin_compat_matrix().toolkit_driver.size());
  EXPECT_EQ(m.min_driver_for(v("12.4"))->str(), "550.54.14");
}

TEST_F(CompatMatrixDir, FilesInTheDirReplaceTheirBuiltInCopy) {
  write("cuda_toolkit_driver.tsv", kToolkitHeader + "12.4.0\tGA\t550.99.99\t" + kUrl + "\n");
  write("README.md", "not a matrix file, ignored\n");
  const CompatMatrix m = load_from_dir(m_dir + "/");
  ASSERT_EQ(m.toolkit_driver.size(), 1u);
  EXPECT_EQ(m.min_driver_for(v("12.4"))->str(), "550.99.99");
  EXPECT_FALSE(m.min_driver_for(v("13.0")));
  EXPECT_EQ(m.minor_compat_min_driver(12)->str(), "525.60.13");  // from the built-in copy
}

TEST_F(CompatMatrixDir, MalformedFileNamesItsPathAndLine) {
  std::string text(embedded_matrix_file("driver_branch_cuda.tsv"));
  text += "630\t13.x\t-\t" + kUrl + "\n";
  write("driver_branch_cuda.tsv", text);
  const int line = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  try {
    (void)load_from_dir(m_dir);
    FAIL() << "no MatrixError";
  } catch (const MatrixError& e) {
    EXPECT_EQ(std::string(e.what()), m_dir + "/driver_branch_cuda.tsv:" + std::to_string(line) +
                                         ": column 2 (cuda) is not a CUDA version (major.minor)");
  }
  write("driver_branch_cuda.tsv", "");
  EXPECT_THROW((void)load_from_dir(m_dir), MatrixError);
}

TEST_F(CompatMatrixDir, AFileThatIsNoMatrixIsNeverQuoted) {
  // --matrix DIR may hold anyone's file (a link to /etc/shadow): the message names the line and
  // what was expected, never the text found.
  write("cuda_toolkit_driver.tsv", "root:$6$SECRETHASH:19000:0:99999:7:::\n");
  try {
    (void)load_from_dir(m_dir);
    FAIL() << "no MatrixError";
  } catch (const MatrixError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find("SECRETHASH"), std::string::npos) << what;
    EXPECT_NE(what.find("cuda_toolkit_driver.tsv:1: expected the header"), std::string::npos) << what;
  }
  write("cuda_toolkit_driver.tsv", kToolkitHeader + "12.4.0\tGHP_0123SECRET\t550.54.14\t" + kUrl + "\n");
  try {
    (void)load_from_dir(m_dir);
    FAIL() << "no MatrixError";
  } catch (const MatrixError& e) {
    EXPECT_EQ(std::string(e.what()), m_dir +
                                         "/cuda_toolkit_driver.tsv:3: column 2 (release) is not a release label "
                                         "(GA, RC or Update N)");
  }
}

TEST_F(CompatMatrixDir, AFifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((m_dir + "/nccl_known_issues.tsv").c_str(), 0600), 0);
  try {
    (void)load_from_dir(m_dir);
    FAIL() << "no MatrixError";
  } catch (const MatrixError& e) {
    EXPECT_EQ(std::string(e.what()), m_dir + "/nccl_known_issues.tsv: not a regular file");
  }
}

TEST_F(CompatMatrixDir, MissingDirIsAnError) {
  try {
    (void)load_from_dir(m_dir + "/nope");
    FAIL() << "no MatrixError";
  } catch (const MatrixError& e) {
    EXPECT_EQ(std::string(e.what()), "'" + m_dir + "/nope': not a directory");
  }
}

TEST_F(CompatMatrixDir, TheSourceTreeCopyLoads) {
  const CompatMatrix m = load_from_dir(preflight::test_paths::source_dir() + "/matrix");
  EXPECT_EQ(m.toolkit_driver.size(), builtin_compat_matrix().toolkit_driver.size());
  EXPECT_EQ(m.nccl_issues.size(), builtin_compat_matrix().nccl_issues.size());
}

}  // namespace
}  // namespace matrix_compat_matrix_test
}  // namespace preflight
