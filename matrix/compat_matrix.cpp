// SPDX-License-Identifier: MIT
#include "matrix/compat_matrix.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>

#include "core/text.hpp"
#include "matrix/embedded.hpp"

namespace preflight {
namespace {

// One file being parsed: its name for messages and the current line.
class Parser {
 public:
  Parser(std::string_view display_name, std::string_view text, std::string_view header)
      : m_name(display_name), m_text(text), m_header(header) {}

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw MatrixError(m_name + ":" + std::to_string(line) + ": " + what);
  }

  // Calls row(fields, line) for every data row after checking the header and column count.
  void each_row(const std::function<void(const std::vector<std::string_view>&, int)>& row) const {
    const std::size_t columns = split(m_header, '\t').size();
    bool header_seen = false;
    int number = 0;
    int rows = 0;
    std::vector<std::string_view> lines = split(m_text, '\n');
    if (!lines.empty() && lines.back().empty()) lines.pop_back();  // the final newline
    for (std::string_view line : lines) {
      ++number;
      if (!line.empty() && line.back() == '\r') fail(number, "carriage return (the file must use LF line ends)");
      if (line.empty() || line.front() == '#') continue;
      if (!header_seen) {
        if (line != m_header) fail(number, "expected the header '" + printable(m_header) + "', found another line");
        header_seen = true;
        continue;
      }
      const std::vector<std::string_view> fields = split(line, '\t');
      m_fields = &fields;
      if (fields.size() != columns) {
        fail(number,
             "expected " + std::to_string(columns) + " tab-separated columns, got " + std::to_string(fields.size()));
      }
      for (std::size_t i = 0; i < fields.size(); ++i) {
        if (fields[i].empty() || trim(fields[i]) != fields[i]) {
          fail(number, "column " + std::to_string(i + 1) + " is empty or has surrounding spaces (write '-' for none)");
        }
      }
      const std::string_view source = fields.back();
      if (!(source.starts_with("https://") || source.starts_with("http://")) ||
          source.find(' ') != std::string_view::npos) {
        fail(number, "no source URL (the last column must be an http(s) URL without spaces)");
      }
      row(fields, number);
      m_fields = nullptr;
      ++rows;
    }
    if (!header_seen) fail(std::max(number, 1), "expected the header '" + printable(m_header) + "', found end of file");
    if (rows == 0) fail(number, "no rows");
  }

  Version version(std::string_view field, int line, const char* what, std::size_t min_parts,
                  std::size_t max_parts) const {
    const std::optional<Version> v = Version::parse(field);
    if (!v || v->size() < min_parts || v->size() > max_parts) fail(line, column_of(field) + " is not " + what);
    return *v;
  }
  std::optional<Version> optional_version(std::string_view field, int line, const char* what, std::size_t min_parts,
                                          std::size_t max_parts) const {
    if (field == "-") return std::nullopt;
    return version(field, line, what, min_parts, max_parts);
  }
  unsigned number(std::string_view field, int line, const char* what) const {
    const std::optional<std::uint64_t> n = parse_uint(field);
    if (!n || *n == 0 || *n > 100000) fail(line, column_of(field) + " is not " + what);
    return static_cast<unsigned>(*n);
  }
  std::optional<unsigned> optional_number(std::string_view field, int line, const char* what) const {
    if (field == "-") return std::nullopt;
    return number(field, line, what);
  }

  // "column 2 (release)": a field of the row being read, named by its place and its header's name
  // (never by its text: --matrix DIR may hold anyone's file).
  std::string column_of(std::string_view field) const {
    const std::vector<std::string_view> names = split(m_header, '\t');
    for (std::size_t i = 0; m_fields != nullptr && i < m_fields->size(); ++i) {
      if ((*m_fields)[i].data() != field.data()) continue;
      return "column " + std::to_string(i + 1) + (i < names.size() ? " (" + std::string(names[i]) + ")" : "");
    }
    return "a field";
  }

  // Rows must be strictly ascending by key: equal keys are duplicates.
  template <typename Key>
  void ascending(const std::optional<Key>& previous, int previous_line, const Key& key, int line,
                 const std::string& key_text, const char* what) const {
    if (!previous) return;
    if (*previous == key)
      fail(line,
           "duplicate " + std::string(what) + " " + key_text + " (also on line " + std::to_string(previous_line) + ")");
    if (key < *previous) fail(line, std::string(what) + " " + key_text + " is out of order (rows must be ascending)");
  }

 private:
  std::string m_name;
  std::string_view m_text;
  std::string_view m_header;
  mutable const std::vector<std::string_view>* m_fields = nullptr;  // the row being read
};

std::string dash_empty(std::string_view field) { return field == "-" ? std::string() : std::string(field); }

void parse_toolkit_driver(const Parser& p, CompatMatrix& m) {
  std::vector<ToolkitDriverRow> rows;
  p.each_row([&](const std::vector<std::string_view>& f, int line) {
    ToolkitDriverRow r;
    r.toolkit = p.version(f[0], line, "a CUDA toolkit version (major.minor.patch)", 3, 3);
    r.release = std::string(f[1]);
    if (!(r.release == "GA" || r.release == "RC" ||
          (r.release.starts_with("Update ") && parse_uint(std::string_view(r.release).substr(7)).value_or(0) > 0))) {
      p.fail(line, p.column_of(f[1]) + " is not a release label (GA, RC or Update N)");
    }
    r.min_driver = p.version(f[2], line, "a driver version", 1, 3);
    r.source = std::string(f[3]);
    r.line = line;
    if (!rows.empty()) {
      const ToolkitDriverRow& prev = rows.back();
      p.ascending(std::optional<Version>(prev.toolkit), prev.line, r.toolkit, line, r.toolkit.str(), "CUDA toolkit");
      if (r.min_driver < prev.min_driver) {
        p.fail(line, "driver " + r.min_driver.str() + " is older than the " + prev.min_driver.str() +
                         " of the earlier release " + prev.toolkit.str());
      }
    }
    if (r.is_ga()) {
      for (const ToolkitDriverRow& other : rows) {
        if (other.is_ga() && other.toolkit.truncated(2) == r.toolkit.truncated(2)) {
          p.fail(line, "duplicate GA row for CUDA " + r.toolkit.truncated(2).str() + " (also on line " +
                           std::to_string(other.line) + ")");
        }
      }
    }
    rows.push_back(std::move(r));
  });
  m.toolkit_driver = std::move(rows);
}

void parse_minor_compat(const Parser& p, CompatMatrix& m) {
  std::vector<MinorCompatRow> rows;
  p.each_row([&](const std::vector<std::string_view>& f, int line) {
    MinorCompatRow r;
    r.major = p.number(f[0], line, "a CUDA major version");
    r.min_driver = p.version(f[1], line, "a driver version", 1, 3);
    r.note = dash_empty(f[2]);
    r.source = std::string(f[3]);
    r.line = line;
    if (!rows.empty()) {
      p.ascending(std::optional<unsigned>(rows.back().major), rows.back().line, r.major, line, std::to_string(r.major),
                  "CUDA major");
    }
    rows.push_back(std::move(r));
  });
  m.minor_compat = std::move(rows);
}

void parse_driver_branches(const Parser& p, CompatMatrix& m) {
  std::vector<DriverBranchRow> rows;
  p.each_row([&](const std::vector<std::string_view>& f, int line) {
    DriverBranchRow r;
    r.branch = p.number(f[0], line, "a driver branch (its major number: 535)");
    r.cuda = p.version(f[1], line, "a CUDA version (major.minor)", 2, 2);
    r.note = dash_empty(f[2]);
    r.source = std::string(f[3]);
    r.line = line;
    if (!rows.empty()) {
      const DriverBranchRow& prev = rows.back();
      p.ascending(std::optional<unsigned>(prev.branch), prev.line, r.branch, line, std::to_string(r.branch),
                  "driver branch");
      if (r.cuda < prev.cuda)
        p.fail(line, "CUDA " + r.cuda.str() + " is older than the " + prev.cuda.str() + " of the earlier branch " +
                         std::to_string(prev.branch));
    }
    rows.push_back(std::move(r));
  });
  m.driver_branches = std::move(rows);
}

void parse_cc_ranges(const Parser& p, CompatMatrix& m) {
  std::vector<CcRangeRow> rows;
  p.each_row([&](const std::vector<std::string_view>& f, int line) {
    CcRangeRow r;
    r.cuda_from = p.version(f[0], line, "a CUDA version (major.minor)", 2, 2);
    r.cuda_to = p.optional_version(f[1], line, "a CUDA version (major.minor, or - for no upper bound)", 2, 2);
    r.min_cc = p.version(f[2], line, "a compute capability (major.minor)", 2, 2);
    r.max_cc = p.version(f[3], line, "a compute capability (major.minor)", 2, 2);
    r.source = std::string(f[4]);
    r.line = line;
    if (r.cuda_to && *r.cuda_to < r.cuda_from)
      p.fail(line, "range " + r.cuda_from.str() + ".." + r.cuda_to->str() + " is empty");
    if (r.max_cc < r.min_cc) p.fail(line, "compute capability " + r.min_cc.str() + ".." + r.max_cc.str() + " is empty");
    if (!rows.empty()) {
      const CcRangeRow& prev = rows.back();
      if (!prev.cuda_to) p.fail(line, "range after the open-ended range on line " + std::to_string(prev.line));
      if (r.cuda_from == prev.cuda_from)
        p.fail(line, "duplicate CUDA " + r.cuda_from.str() + " (also on line " + std::to_string(prev.line) + ")");
      if (r.cuda_from <= *prev.cuda_to)
        p.fail(line, "CUDA " + r.cuda_from.str() + " overlaps or precedes the range on line " +
                         std::to_string(prev.line) + " (rows must be ascending)");
    }
    rows.push_back(std::move(r));
  });
  m.cc_ranges = std::move(rows);
}

void parse_gpu_archs(const Parser& p, CompatMatrix& m) {
  std::vector<GpuArchRow> rows;
  p.each_row([&](const std::vector<std::string_view>& f, int line) {
    GpuArchRow r;
    r.cc = p.version(f[0], line, "a compute capability (major.minor)", 2, 2);
    r.arch = std::string(f[1]);
    r.first_cuda = p.optional_version(f[2], line, "a CUDA version (major.minor, or -)", 2, 2);
    r.first_driver_branch = p.optional_number(f[3], line, "a driver branch (or -)");
    r.last_cuda_major = p.optional_number(f[4], line, "a CUDA major version (or -)");
    r.last_driver_branch = p.optional_number(f[5], line, "a driver branch (or -)");
    r.source = std::string(f[6]);
    r.line = line;
    if (r.first_driver_branch && r.last_driver_branch && *r.last_driver_branch < *r.first_driver_branch) {
      p.fail(line, "last driver branch R" + std::to_string(*r.last_driver_branch) + " is older than the first, R" +
                       std::to_string(*r.first_driver_branch));
    }
    if (!rows.empty())
      p.ascending(std::optional<Version>(rows.back().cc), rows.back().line, r.cc, line, r.cc.str(),
                  "compute capability");
    rows.push_back(std::move(r));
  });
  m.gpu_archs = std::move(rows);
}

void parse_nccl_issues(const Parser& p, CompatMatrix& m) {
  std::vector<NcclIssueRow> rows;
  std::map<std::string, int, std::less<>> seen;
  p.each_row([&](const std::vector<std::string_view>& f, int line) {
    NcclIssueRow r;
    r.id = std::string(f[0]);
    r.from = p.version(f[1], line, "an NCCL version (X.Y.Z)", 3, 3);
    r.below = p.version(f[2], line, "an NCCL version (X.Y.Z)", 3, 3);
    r.condition = std::string(f[3]);
    r.problem = std::string(f[4]);
    r.fix = std::string(f[5]);
    r.mitigation = std::string(f[6]);
    r.source = std::string(f[7]);
    r.line = line;
    for (std::string_view alt : split(r.mitigation, '|')) {
      if (r.mitigation != "-" &&
          !(alt.starts_with("env:") && alt.find('=') != std::string_view::npos && alt.find('=') > 4)) {
        p.fail(line, p.column_of(f[6]) + " is not a mitigation (-, or env:NAME=VALUE alternatives separated by '|')");
      }
    }
    if (!(r.below > r.from)) p.fail(line, "range " + r.from.str() + " <= v < " + r.below.str() + " is empty");
    const std::string_view c = r.condition;
    if (!(c == "-" || c == "gdr" || c == "cuda-graphs" || (c.starts_with("gpu:") && c.size() > 4) ||
          (c.starts_with("env:") && c.find('=') != std::string_view::npos && c.find('=') > 4))) {
      p.fail(line, p.column_of(f[3]) + " is not a condition (-, env:NAME=VALUE, gpu:NAME, gdr, cuda-graphs)");
    }
    if (auto [it, inserted] = seen.emplace(r.id, line); !inserted) {
      p.fail(line, "duplicate id (also on line " + std::to_string(it->second) + ")");
    }
    rows.push_back(std::move(r));
  });
  m.nccl_issues = std::move(rows);
}

void parse_torch_builds(const Parser& p, CompatMatrix& m) {
  std::vector<TorchBuildRow> rows;
  p.each_row([&](const std::vector<std::string_view>& f, int line) {
    TorchBuildRow r;
    r.cuda = p.version(f[0], line, "a CUDA version (major.minor)", 2, 2);
    r.index_url = std::string(f[1]);
    if (!r.index_url.starts_with("https://")) p.fail(line, p.column_of(f[1]) + " is not an https:// index URL");
    r.first_torch = p.version(f[2], line, "a torch version (X.Y.Z)", 3, 3);
    r.source = std::string(f[3]);
    r.line = line;
    if (!rows.empty())
      p.ascending(std::optional<Version>(rows.back().cuda), rows.back().line, r.cuda, line, r.cuda.str(), "CUDA");
    rows.push_back(std::move(r));
  });
  m.torch_builds = std::move(rows);
}

struct FileSpec {
  std::string_view name;
  std::string_view header;
  void (*parse)(const Parser&, CompatMatrix&);
};

constexpr FileSpec kMatrixFiles[] = {
    {"cuda_toolkit_driver.tsv", "toolkit\trelease\tmin_driver\tsource", parse_toolkit_driver},
    {"cuda_minor_compat.tsv", "major\tmin_driver\tnote\tsource", parse_minor_compat},
    {"driver_branch_cuda.tsv", "branch\tcuda\tnote\tsource", parse_driver_branches},
    {"cuda_compute_capability.tsv", "cuda_from\tcuda_to\tmin_cc\tmax_cc\tsource", parse_cc_ranges},
    {"gpu_arch.tsv", "cc\tarch\tfirst_cuda\tfirst_driver_branch\tlast_cuda_major\tlast_driver_branch\tsource",
     parse_gpu_archs},
    {"nccl_known_issues.tsv", "id\tfrom\tbelow\tcondition\tproblem\tfix\tmitigation\tsource", parse_nccl_issues},
    {"torch_cuda_builds.tsv", "cuda\tindex_url\tfirst_torch\tsource", parse_torch_builds},
};

const FileSpec& spec_for(std::string_view file) {
  for (const FileSpec& spec : kMatrixFiles) {
    if (spec.name == file) return spec;
  }
  throw MatrixError(std::string(file) + ": not a compatibility-matrix file");
}

}  // namespace

bool CcRangeRow::covers(const Version& cuda) const {
  const Version mm = cuda.truncated(2);
  return cuda_from <= mm && (!cuda_to || mm <= *cuda_to);
}

const ToolkitDriverRow* CompatMatrix::toolkit_row(const Version& cuda) const {
  if (cuda.size() >= 3) {
    for (const ToolkitDriverRow& r : toolkit_driver) {
      if (r.toolkit == cuda) return &r;
    }
  }
  const Version minor = cuda.truncated(2);
  for (const ToolkitDriverRow& r : toolkit_driver) {
    if (r.is_ga() && r.toolkit.truncated(2) == minor) return &r;
  }
  return nullptr;
}

std::optional<Version> CompatMatrix::min_driver_for(const Version& cuda) const {
  const ToolkitDriverRow* r = toolkit_row(cuda);
  return r ? std::optional<Version>(r->min_driver) : std::nullopt;
}

std::optional<Version> CompatMatrix::minor_compat_min_driver(unsigned major) const {
  for (const MinorCompatRow& r : minor_compat) {
    if (r.major == major) return r.min_driver;
  }
  return std::nullopt;
}

const DriverBranchRow* CompatMatrix::newest_branch() const {
  return driver_branches.empty() ? nullptr : &driver_branches.back();
}

bool CompatMatrix::newer_than_matrix(const Version& driver) const {
  const DriverBranchRow* newest = newest_branch();
  return newest != nullptr && driver.major() > newest->branch;
}

const DriverBranchRow* CompatMatrix::branch_for_driver(const Version& driver) const {
  if (newer_than_matrix(driver)) return nullptr;
  const DriverBranchRow* best = nullptr;
  for (const DriverBranchRow& r : driver_branches) {
    if (r.branch <= driver.major()) best = &r;
  }
  return best;
}

std::optional<Version> CompatMatrix::cuda_reported_by_driver(const Version& driver) const {
  const DriverBranchRow* r = branch_for_driver(driver);
  return r ? std::optional<Version>(r->cuda) : std::nullopt;
}

const CcRangeRow* CompatMatrix::cc_range_for(const Version& cuda) const {
  for (const CcRangeRow& r : cc_ranges) {
    if (r.covers(cuda)) return &r;
  }
  return nullptr;
}

const GpuArchRow* CompatMatrix::arch_for_cc(const Version& cc) const {
  for (const GpuArchRow& r : gpu_archs) {
    if (r.cc == cc.truncated(2)) return &r;
  }
  return nullptr;
}

const TorchBuildRow* CompatMatrix::torch_build_for(const Version& cuda) const {
  const TorchBuildRow* best = nullptr;
  for (const TorchBuildRow& r : torch_builds) {
    if (r.cuda <= cuda.truncated(2)) best = &r;
  }
  return best;
}

std::string NcclIssueRow::mitigated_by(const std::function<std::optional<std::string>(const std::string&)>& get) const {
  if (mitigation == "-" || mitigation.empty()) return {};
  for (std::string_view alt : split(mitigation, '|')) {
    const std::string_view spec = alt.substr(4);
    const std::size_t eq = spec.find('=');
    const std::string name(spec.substr(0, eq)), want(spec.substr(eq + 1));
    const std::optional<std::string> have = get(name);
    if (!have) continue;
    const std::string value(trim(*have));
    if (!want.empty() && want.front() == '^') {
      // The list leaves the item out: "^LL128" (and "^LL128,LL"), or an include list without it.
      const std::string item = to_lower(want.substr(1));
      const bool exclude = !value.empty() && value.front() == '^';
      bool listed = false;
      for (std::string_view v : split(exclude ? std::string_view(value).substr(1) : std::string_view(value), ',')) {
        listed = listed || to_lower(trim(v)) == item;
      }
      if (!value.empty() && value.find_first_of(":;") == std::string::npos && (exclude ? listed : !listed))
        return std::string(alt.substr(4));
    } else if (to_lower(value) == to_lower(want)) {
      return std::string(alt.substr(4));
    }
  }
  return {};
}

std::vector<const NcclIssueRow*> CompatMatrix::nccl_issues_for(const Version& nccl) const {
  std::vector<const NcclIssueRow*> out;
  for (const NcclIssueRow& r : nccl_issues) {
    if (r.affects(nccl)) out.push_back(&r);
  }
  return out;
}

const std::vector<std::string>& compat_matrix_files() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const FileSpec& spec : kMatrixFiles) out.emplace_back(spec.name);
    return out;
  }();
  return names;
}

void parse_matrix_file(std::string_view file, std::string_view text, std::string_view display_name,
                       CompatMatrix& into) {
  const FileSpec& spec = spec_for(file);
  spec.parse(Parser(display_name, text, spec.header), into);
}

CompatMatrix load_builtin() {
  CompatMatrix m;
  for (const FileSpec& spec : kMatrixFiles) {
    parse_matrix_file(spec.name, embedded_matrix_file(spec.name), "matrix/" + std::string(spec.name), m);
  }
  return m;
}

const CompatMatrix& builtin_compat_matrix() {
  static const CompatMatrix matrix = load_builtin();
  return matrix;
}

namespace {

constexpr std::size_t kMaxMatrixFileBytes = 16u << 20;
constexpr const char* kMatrixTooLarge = "larger than 16 MiB: not a compatibility-matrix file";

/// The descriptor's bytes up to one past kMaxMatrixFileBytes (a read error ends them).
std::string read_matrix_bytes(int fd) {
  std::string text;
  char chunk[65536];
  while (text.size() <= kMaxMatrixFileBytes) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  return text;
}

/// One file of --matrix DIR: a regular file of at most 16 MiB, opened without blocking (a FIFO or
/// a device is refused, never read); nullopt when it does not exist.
std::optional<std::string> read_matrix_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0 && errno == ENOENT) return std::nullopt;
  if (fd < 0) throw MatrixError(printable(path, 200) + ": cannot read: " + std::strerror(errno));
  struct stat st {};
  std::string text;
  const char* problem = nullptr;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = "not a regular file";
  } else if (static_cast<std::uintmax_t>(st.st_size) > kMaxMatrixFileBytes) {
    problem = kMatrixTooLarge;
  } else {
    text = read_matrix_bytes(fd);
    if (text.size() > kMaxMatrixFileBytes) problem = kMatrixTooLarge;
  }
  ::close(fd);
  if (problem != nullptr) throw MatrixError(printable(path, 200) + ": " + problem);
  return text;
}

}  // namespace

CompatMatrix load_from_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw MatrixError("'" + printable(dir, 200) + "': not a directory");
  CompatMatrix m;
  for (const FileSpec& spec : kMatrixFiles) {
    const std::string path = (dir.ends_with('/') ? dir : dir + "/") + std::string(spec.name);
    const std::optional<std::string> text = read_matrix_file(path);
    if (!text) {
      parse_matrix_file(spec.name, embedded_matrix_file(spec.name), "matrix/" + std::string(spec.name), m);
      continue;
    }
    parse_matrix_file(spec.name, *text, printable(path, 200), m);
  }
  return m;
}

}  // namespace preflight
