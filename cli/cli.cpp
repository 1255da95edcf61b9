// SPDX-License-Identifier: MIT
#include "cli/cli.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include <boost/program_options.hpp>

#include "checks/check.hpp"
#include "core/byte_kind.hpp"
#include "core/text.hpp"
#include "job/run.hpp"
#include "sys/bounded_read.hpp"

namespace po = boost::program_options;

namespace preflight {
namespace {

/// Boost's error_with_option_name::what() replaces each %name% placeholder of its message until none
/// is left, so an option name or value that holds its own placeholder (a config-file key
/// "%canonical_option%") never ends. The user's text goes into the message with '%' as "%25".
struct OptionErrorText : po::error_with_option_name {
  static std::string of(const po::error_with_option_name& e) {
    po::error_with_option_name copy(e);
    std::map<std::string, std::string> subs = copy.*(&OptionErrorText::m_substitutions);
    for (auto& [name, value] : subs) {
      std::string escaped;
      for (char c : value) escaped += c == '%' ? std::string("%25") : std::string(1, c);
      copy.set_substitute(name, escaped);
    }
    return copy.what();
  }
};
std::string safe_what(const po::error_with_option_name& e) { return OptionErrorText::of(e); }

po::options_description run_options() {
  po::options_description d("Options of `preflight run`");
  // clang-format off
  d.add_options()
    ("profile", po::value<std::string>(), "node | job | image (default: node alone, job under a multi-rank launcher)")
    ("only", po::value<std::vector<std::string>>()->composing(), "run only these checks: GLOB[,GLOB] on check ids, e.g. 'net.*'")
    ("skip", po::value<std::vector<std::string>>()->composing(), "skip these checks: GLOB[,GLOB]")
    ("format", po::value<std::string>(), "what goes to stdout: text | json | junit | prometheus (default text)")
    ("json", po::value<std::string>(), "also write the JSON report to FILE")
    ("junit", po::value<std::string>(), "also write a JUnit XML report to FILE")
    ("prom", po::value<std::string>(), "also write a Prometheus textfile to FILE")
    ("timeout", po::value<std::string>(), "wall-clock budget for the whole run in seconds (default 60)")
    ("strict", po::bool_switch(), "WARN counts as FAIL for the exit code")
    ("color", po::value<std::string>(), "auto | always | never (auto: on a TTY unless NO_COLOR is set and not empty)")
    ("progress", po::value<std::string>(), "auto | always | never: a progress line on stderr for phases longer than 1 s (auto: stderr is a TTY)")
    ("expect-gpus", po::value<std::string>(), "GPUs each node must show")
    ("expect-world-size", po::value<std::string>(), "ranks the job must have")
    ("expect-nodes", po::value<std::string>(), "nodes the job must span")
    ("min-busbw", po::value<std::string>(), "all_reduce bus bandwidth floor in GB/s")
    ("allreduce-bytes", po::value<std::string>(), "all_reduce message size, 16 B to 8 GiB in whole 8-byte elements (default 32M over NCCL, 1M over MPI)")
    ("target-driver", po::value<std::string>(), "image profile: the fleet's driver version: 535, 535.104 or 535.104.05")
    ("target-gpu", po::value<std::vector<std::string>>()->composing(),
     "image profile: the fleet's GPUs CC[,CC]: 9.0, sm_90, 90, 9.0a, compute_90, 10.0, 100; none for a CPU-only image")
    ("site-packages", po::value<std::vector<std::string>>()->composing(), "where the training framework lives (repeatable)")
    ("python", po::value<std::string>(), "the Python interpreter of the job")
    ("cuda-runtime", po::value<std::vector<std::string>>()->composing(), "a CUDA runtime library the job will load (repeatable)")
    ("nccl-lib", po::value<std::string>(), "the libnccl the job will load")
    ("model-params", po::value<std::string>(), "parameters of the model, e.g. 7B or 70e9 (host.memory, host.disk)")
    ("zero-stage", po::value<std::string>(), "ZeRO/FSDP sharding stage 0..3 (host.memory, host.disk)")
    ("tensor-parallel", po::value<std::string>(), "tensor-parallel degree of the model, default 1 (host.memory)")
    ("pipeline-parallel", po::value<std::string>(), "pipeline-parallel degree of the model, default 1 (host.memory)")
    ("ranks-per-node", po::value<std::string>(), "local ranks on each node (default: from the launcher, else 1)")
    ("host-bytes-per-rank", po::value<std::string>(), "host memory each rank uses outside checkpoints (default 4G)")
    ("checkpoint-dir", po::value<std::vector<std::string>>()->composing(),
     "where the job writes checkpoints (repeatable; without one host.disk judges the current directory, as information only): free space and inodes vs the checkpoint size (host.disk)")
    ("shm-dataloader-bytes", po::value<std::string>(), "/dev/shm each rank's DataLoader workers use (default 256M)")
    ("nccl-communicators", po::value<std::string>(), "NCCL communicators per rank (default 1; shm.capacity)")
    ("sysroot", po::value<std::string>(), "read /sys, /proc, /etc and /dev/shm facts below DIR")
    ("topology-xml", po::value<std::string>(), "take the topology from an `lstopo --of xml` export")
    ("matrix", po::value<std::string>(), "compatibility data from DIR instead of the built-in copy")
    ("json-per-rank", po::value<std::string>(), "every rank also writes its own result file into DIR")
    ("mpi", po::value<std::string>(), "auto | on | off: gather the ranks over MPI (auto: when mpirun/srun started preflight; on: also alone, as an MPI singleton)")
    ("config", po::value<std::string>(), "INI file with the same option names (command line wins)")
    ("verbose,v", po::bool_switch(), "evidence for every check, PASS included");
  // clang-format on
  return d;
}

po::options_description capture_options() {
  po::options_description d("Options of `preflight capture` (with the options of `run` that decide what is read)");
  d.add_options()("tar", po::value<std::string>(), "also write the capture as a tar archive FILE (never overwritten)");
  return d;
}

po::options_description generic_options() {
  po::options_description d("General");
  d.add_options()("help,h", "this help")("version", "print the version");
  return d;
}

[[noreturn]] void bad_value(const std::string& option, const std::string& value, const std::string& expected) {
  throw UsageError("--" + option + " '" + printable(value, 60) + "': expected " + expected);
}

std::vector<std::string> comma_list(const po::variables_map& vm, const char* name) {
  std::vector<std::string> out;
  if (!vm.count(name)) return out;
  for (const std::string& item : vm[name].as<std::vector<std::string>>()) {
    for (std::string_view part : split(item, ',')) {
      part = trim(part);
      if (!part.empty()) out.emplace_back(part);
    }
  }
  return out;
}

std::optional<std::string> str(const po::variables_map& vm, const char* name) {
  if (!vm.count(name)) return std::nullopt;
  return vm[name].as<std::string>();
}

/// A path option as given, "" when not given; given empty (`--sysroot ''`, an unset variable in a
/// script) it is a usage error, never "this machine" or "the default".
std::string path_option(const po::variables_map& vm, const char* name, const char* expected) {
  const std::optional<std::string> v = str(vm, name);
  if (v && trim(*v).empty()) bad_value(name, *v, expected);
  return v.value_or("");
}

int int_in(const po::variables_map& vm, const char* name, long long lo, long long hi, const char* expected) {
  const std::string v = *str(vm, name);
  const auto n = parse_int(trim(v));
  if (!n || *n < lo || *n > hi) bad_value(name, v, expected);
  return static_cast<int>(*n);
}

double positive_double(const po::variables_map& vm, const char* name, const char* expected) {
  const std::string v = *str(vm, name);
  try {
    std::size_t used = 0;
    const double d = std::stod(v, &used);
    if (used != v.size() || !std::isfinite(d) || d <= 0) bad_value(name, v, expected);
    return d;
  } catch (const std::logic_error&) {
    bad_value(name, v, expected);
  }
}

/// An input path option (--site-packages, --nccl-lib, --cuda-runtime, --python) as an absolute
/// path: a relative one from the working directory, or under --sysroot from the captured root;
/// "." and ".." folded, links left as they are (a venv's python is one). A bare library name
/// (`names_allowed`, no '/') is left for dlopen to search. Given but not there: a usage error.
std::string given_input(const char* option, const std::string& value, const std::string& sysroot,
                        const std::string& expected, bool names_allowed) {
  if (names_allowed && value.find('/') == std::string::npos) return value;
  std::filesystem::path p(value);
  if (!sysroot.empty()) {
    p = std::filesystem::path("/") / p;
  } else if (p.is_relative()) {
    std::error_code ec;
    const std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (ec) bad_value(option, value, expected + " (the working directory is not readable: " + ec.message() + ")");
    p = cwd / p;
  }
  p = p.lexically_normal();
  // Under --sysroot the file is the captured tree's: its links are not followed out of the tree.
  const std::string there =
      sysroot.empty() ? p.string() : (std::filesystem::path(sysroot) / p.relative_path()).string();
  struct stat st {};
  if ((sysroot.empty() ? ::stat(there.c_str(), &st) : ::lstat(there.c_str(), &st)) != 0) {
    bad_value(option, value, expected + " (" + printable(there, 120) + ": " + std::strerror(errno) + ")");
  }
  return p.string();
}

// --python EXE as the shell would run it: a name without '/' looked up on PATH; the file must be an
// executable regular file. Under --sysroot the path names a file of the captured tree (not run).
std::string python_executable(const std::string& exe, const std::string& sysroot) {
  if (exe.empty()) bad_value("python", exe, "an interpreter (a path, or a name on PATH)");
  auto runnable = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (!sysroot.empty()) {
    if (exe.front() != '/') bad_value("python", exe, "an absolute path inside --sysroot");
    return exe;
  }
  if (exe.find('/') != std::string::npos) {
    if (!runnable(exe)) bad_value("python", exe, "an executable file (it does not exist or is not executable)");
    return given_input("python", exe, sysroot, "an executable file", false);
  }
  const char* path = std::getenv("PATH");
  for (const std::string_view dir : split(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + exe;
    if (runnable(candidate)) return candidate;
  }
  bad_value("python", exe, "an interpreter on PATH or a path to one (not found on PATH)");
}

std::uint64_t size_value(const po::variables_map& vm, const char* name) {
  const std::string v = *str(vm, name);
  const auto n = parse_size(v);
  if (!n) bad_value(name, v, "a size such as 512M or 8G");
  return *n;
}

/// "did you mean shm.capacity?" for a glob that matches no check: the closest id when one is close
/// (a typo), else the areas the ids are in.
std::string did_you_mean(const std::string& glob) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  std::vector<std::string> areas;
  for (const CheckSpec* spec : all_checks()) {
    const std::string id(spec->id);
    const std::size_t d = edit_distance(to_lower(glob), id);
    if (d < best_distance) {
      best_distance = d;
      best = id;
    }
    const std::string area = id.substr(0, id.find('.')) + ".*";
    if (std::find(areas.begin(), areas.end(), area) == areas.end()) areas.push_back(area);
  }
  if (best_distance <= std::max<std::size_t>(2, glob.size() / 4)) return "did you mean " + best + "?";
  return "check ids are AREA.NAME, areas " + join(areas, ", ") + "; see `preflight list`";
}

/// --only and --skip are checked against the registry: a glob that matches no check is a typo
/// (a gate that runs nothing must not pass), and so is a selection that leaves no check.
void validate_selection(const Options& o) {
  const auto matches_some = [](const std::string& glob) {
    for (const CheckSpec* spec : all_checks()) {
      if (glob_match(glob, spec->id)) return true;
    }
    return false;
  };
  for (const auto& [option, globs] : {std::pair{"only", &o.only}, std::pair{"skip", &o.skip}}) {
    for (const std::string& glob : *globs) {
      if (!matches_some(glob)) {
        throw UsageError(std::string("--") + option + " '" + printable(glob, 60) + "' matches no check (" +
                         did_you_mean(glob) + ")");
      }
    }
  }
  for (const CheckSpec* spec : all_checks()) {
    if (selected(o, spec->id)) return;
  }
  throw UsageError("--only '" + printable(join(o.only, ","), 60) + "' with --skip '" +
                   printable(join(o.skip, ","), 60) + "' selects no check");
}

/// One `name = value` line of the config file: a known option name, the value as given.
struct ConfigEntry {
  std::string name;
  std::string value;
  int line = 0;
};

/// The config file's path and the lines it contributes (those the command line does not override).
struct ConfigFile {
  std::string path;
  std::vector<ConfigEntry> entries;
};

/// A file preflight was pointed at may be anyone's (`--config /etc/shadow` as root): its messages
/// give the line and the kind of what was found there, never the file's bytes.
[[noreturn]] void config_error(const std::string& path, const std::string& what) {
  throw UsageError("--config '" + printable(path, 200) + "': " + what);
}
[[noreturn]] void config_line_error(const std::string& path, int line, const std::string& what) {
  config_error(path, "line " + std::to_string(line) + ": " + what);
}

/// The file's text: a regular file of at most 1 MiB, opened without blocking (a FIFO, a device or
/// a socket is refused as it opens, never read).
std::string read_config_text(const std::string& path) {
  constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;
  const BoundedRead r = read_regular_file(path, kMaxConfigBytes);
  using Refusal = BoundedRead::Refusal;
  if (r.refusal == Refusal::Directory) config_error(path, "is a directory, not a file");
  if (r.refusal == Refusal::Open || r.refusal == Refusal::Read) {
    config_error(path, std::string("cannot read the file: ") + std::strerror(r.error));
  }
  if (r.refusal == Refusal::TooLarge) config_error(path, "larger than 1 MiB: not a config file");
  if (!r.ok()) config_error(path, r.problem(kMaxConfigBytes) + ": not a config file");
  return r.text;
}

std::string_view trim_config(std::string_view s) {
  const std::size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

/// "" when the line may be read as INI text; else what it holds that no config line does.
std::string config_binary_byte(std::string_view line) {
  for (const char ch : line) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7F) return byte_kind(c) + " (not a text file)";
  }
  return "";
}

/// One line, comment and spaces removed, as an entry; throws naming the line and the kind of token.
std::optional<ConfigEntry> config_entry(const std::string& path, std::string_view raw, int line,
                                        const po::options_description& options) {
  if (const std::string binary = config_binary_byte(raw); !binary.empty()) config_line_error(path, line, binary);
  const std::string_view text = trim_config(raw.substr(0, raw.find('#')));
  if (text.empty()) return std::nullopt;
  if (text.front() == '[' && text.back() == ']') {
    config_line_error(path, line, "a section header (the config file has no sections)");
  }
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos) config_line_error(path, line, "a line without '=' (expected name = value)");
  ConfigEntry entry{std::string(trim_config(text.substr(0, eq))), std::string(trim_config(text.substr(eq + 1))), line};
  if (entry.name.empty()) config_line_error(path, line, "no option name before '='");
  if (options.find_nothrow(entry.name, /*approx=*/false) == nullptr) {
    config_line_error(path, line, "an unknown option name (`preflight --help` lists the long option names)");
  }
  std::string& value = entry.value;
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  return entry;
}

/// The config file read and split into entries, after the two rules of ours: a UTF-8 byte order
/// mark at the start is dropped, and a value written in matching double or single quotes loses
/// them (`only = "shm.*"` is `only = shm.*`; nothing inside is unescaped). Otherwise the syntax of
/// Boost's INI files: `#` starts a comment, spaces around names and values are dropped.
std::vector<ConfigEntry> read_config_file(const std::string& path, const po::options_description& options) {
  constexpr std::size_t kMaxConfigEntries = 1000;
  const std::string whole = read_config_text(path);
  std::string_view text = whole;
  std::vector<ConfigEntry> out;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  int number = 0;
  for (const std::string_view raw : split(text, '\n')) {
    ++number;
    std::optional<ConfigEntry> entry = config_entry(path, raw, number, options);
    if (!entry) continue;
    if (out.size() == kMaxConfigEntries) config_line_error(path, number, "more than 1000 options");
    out.push_back(std::move(*entry));
  }
  return out;
}

/// The first `count` entries as Boost's parser would have given them.
po::parsed_options config_parsed(const std::vector<ConfigEntry>& entries, std::size_t count,
                                 const po::options_description& options) {
  po::parsed_options parsed(&options);
  for (std::size_t i = 0; i < count && i < entries.size(); ++i) {
    po::option o(entries[i].name, {entries[i].value});
    o.original_tokens = o.value;
    parsed.options.push_back(std::move(o));
  }
  return parsed;
}

/// Adds the file's entries one at a time to the command line's options: the first one `accept`
/// (or Boost's store) refuses is named by its line and option, never by its value.
[[noreturn]] void blame_config_line(const ConfigFile& config, const po::variables_map& command_line,
                                    const po::options_description& options,
                                    const std::function<void(const po::variables_map&)>& accept) {
  for (std::size_t k = 1; k <= config.entries.size(); ++k) {
    const ConfigEntry& entry = config.entries[k - 1];
    po::variables_map vm = command_line;
    try {
      po::store(config_parsed(config.entries, k, options), vm);
      po::notify(vm);
      accept(vm);
    } catch (const po::multiple_occurrences&) {
      config_line_error(config.path, entry.line, "option '" + entry.name + "' again (it takes one value)");
    } catch (const std::exception&) {
      config_line_error(config.path, entry.line,
                        "the value of option '" + entry.name +
                            "' is not accepted (the value is not shown: give it on the command line to see why)");
    }
  }
  config_error(config.path, "its options are not accepted with those of the command line");
}

/// Stores the file's entries over the command line's (which win: dropped from `config` first).
void store_config(po::variables_map& vm, ConfigFile& config, const po::options_description& options) {
  std::erase_if(config.entries,
                [&vm](const ConfigEntry& e) { return vm.count(e.name) != 0 && !vm[e.name].defaulted(); });
  const po::variables_map command_line = vm;
  try {
    po::store(config_parsed(config.entries, config.entries.size(), options), vm);
  } catch (const po::error&) {
    blame_config_line(config, command_line, options, [](const po::variables_map&) {});
  }
}

Options to_options(const po::variables_map& vm) {
  Options o;
  if (auto v = str(vm, "profile")) {
    if (*v == "node")
      o.profile = Profile::Node;
    else if (*v == "job")
      o.profile = Profile::Job;
    else if (*v == "image")
      o.profile = Profile::Image;
    else
      bad_value("profile", *v, "node, job or image");
  }
  o.only = comma_list(vm, "only");
  o.skip = comma_list(vm, "skip");
  if (vm.count("only") && o.only.empty()) {
    throw UsageError("--only '" + printable(join(vm["only"].as<std::vector<std::string>>(), ","), 60) +
                     "' selects no check: give check ids or globs such as 'net.*' (see `preflight list`)");
  }
  if (vm.count("skip") && o.skip.empty()) {
    throw UsageError("--skip '" + printable(join(vm["skip"].as<std::vector<std::string>>(), ","), 60) +
                     "' names no check: give check ids or globs such as 'net.*' (see `preflight list`)");
  }
  if (auto v = str(vm, "format")) {
    if (*v == "text")
      o.format = Format::Text;
    else if (*v == "json")
      o.format = Format::Json;
    else if (*v == "junit")
      o.format = Format::Junit;
    else if (*v == "prometheus")
      o.format = Format::Prometheus;
    else
      bad_value("format", *v, "text, json, junit or prometheus");
  }
  for (const char* file_option : {"json", "junit", "prom"}) {
    // `--json "$OUT"` with OUT unset must not quietly write no report.
    if (vm.count(file_option) && trim(*str(vm, file_option)).empty()) bad_value(file_option, "", "a file name");
  }
  o.json_file = str(vm, "json").value_or("");
  o.junit_file = str(vm, "junit").value_or("");
  o.prom_file = str(vm, "prom").value_or("");
  if (vm.count("timeout")) {
    o.timeout_s = positive_double(vm, "timeout", "a positive number of seconds");
    if (o.timeout_s > kMaxTimeoutSeconds) {
      bad_value("timeout", *str(vm, "timeout"),
                "a positive number of seconds up to " + general(kMaxTimeoutSeconds) + " (24 h)");
    }
  }
  o.strict = vm["strict"].as<bool>();
  o.verbose = vm["verbose"].as<bool>();
  if (auto v = str(vm, "color")) {
    if (*v == "always")
      o.color = 1;
    else if (*v == "never")
      o.color = 0;
    else if (*v != "auto")
      bad_value("color", *v, "auto, always or never");
  }
  if (auto v = str(vm, "progress")) {
    if (*v != "auto" && *v != "always" && *v != "never") bad_value("progress", *v, "auto, always or never");
    o.progress = *v;
  }
  if (vm.count("expect-gpus")) o.expect_gpus = int_in(vm, "expect-gpus", 0, 1 << 20, "a whole number ≥ 0");
  if (vm.count("expect-world-size"))
    o.expect_world_size = int_in(vm, "expect-world-size", 1, 1 << 24, "a whole number ≥ 1");
  if (vm.count("expect-nodes")) o.expect_nodes = int_in(vm, "expect-nodes", 1, 1 << 20, "a whole number ≥ 1");
  if (vm.count("min-busbw")) o.min_busbw_gbps = positive_double(vm, "min-busbw", "a bandwidth in GB/s");
  if (vm.count("allreduce-bytes")) {
    // Refused rather than silently rounded or capped: the size measured is the size asked for.
    const std::uint64_t bytes = size_value(vm, "allreduce-bytes");
    o.allreduce_bytes = bytes;
    if (bytes < kAllreduceMinBytes || bytes > kAllreduceMaxBytes || bytes % kAllreduceElementBytes != 0) {
      bad_value("allreduce-bytes", *str(vm, "allreduce-bytes"),
                "a multiple of " + std::to_string(kAllreduceElementBytes) + " bytes from " +
                    format_bytes(kAllreduceMinBytes) + " to " + format_bytes(kAllreduceMaxBytes) +
                    ": the all_reduce sums whole 8-byte integers, at least two "
                    "(the rank count and the rank sum it checks), and every GPU holds a send and a receive buffer of "
                    "this size (over MPI, every rank in host memory)");
    }
  }
  if (auto v = str(vm, "target-driver")) {
    if (!is_target_driver(*v)) bad_value("target-driver", *v, "a driver version such as 535, 535.104 or 535.104.05");
    o.target_driver = std::string(trim(*v));
  }
  if (vm.count("target-gpu")) {
    constexpr char kSpellings[] =
        "compute capabilities CC[,CC] such as 9.0, sm_90, 90, 9.0a, sm_90a, compute_90, 10.0, 100, sm_100 or 120, "
        "or none for a CPU-only image";
    const std::vector<std::string> items = comma_list(vm, "target-gpu");
    if (items.empty()) bad_value("target-gpu", "", kSpellings);
    for (const std::string& item : items) {
      if (to_lower(item) == "none") {
        if (items.size() > 1) {
          throw UsageError("--target-gpu none (a CPU-only image) cannot be combined with GPU targets ('" +
                           printable(join(items, ","), 60) + "')");
        }
        o.target_cpu_only = true;
        continue;
      }
      const std::optional<std::string> cc = parse_target_gpu(item);
      if (!cc) bad_value("target-gpu", item, kSpellings);
      if (std::find(o.target_gpus.begin(), o.target_gpus.end(), *cc) == o.target_gpus.end()) {
        o.target_gpus.push_back(*cc);
      }
    }
  }
  o.site_packages = comma_list(vm, "site-packages");
  o.python = str(vm, "python").value_or("");
  o.cuda_runtimes = comma_list(vm, "cuda-runtime");
  o.nccl_lib = str(vm, "nccl-lib").value_or("");
  if (auto v = str(vm, "model-params")) {
    o.model_params = parse_count(*v);
    if (!o.model_params || *o.model_params == 0) bad_value("model-params", *v, "a parameter count such as 7B or 70e9");
  }
  if (vm.count("zero-stage")) o.zero_stage = int_in(vm, "zero-stage", 0, 3, "0, 1, 2 or 3");
  if (vm.count("tensor-parallel")) o.tensor_parallel = int_in(vm, "tensor-parallel", 1, 1 << 20, "a whole number ≥ 1");
  if (vm.count("pipeline-parallel"))
    o.pipeline_parallel = int_in(vm, "pipeline-parallel", 1, 1 << 20, "a whole number ≥ 1");
  if (o.tensor_parallel || o.pipeline_parallel) {
    const long long tp = o.tensor_parallel.value_or(1), pp = o.pipeline_parallel.value_or(1);
    if (o.expect_world_size && *o.expect_world_size % (tp * pp) != 0) {
      throw UsageError("--tensor-parallel " + std::to_string(tp) + " × --pipeline-parallel " + std::to_string(pp) +
                       " = " + std::to_string(tp * pp) + " does not divide --expect-world-size " +
                       std::to_string(*o.expect_world_size) +
                       ": every data-parallel replica holds tensor × pipeline ranks (Megatron-LM refuses this layout)");
    }
  }
  if (vm.count("ranks-per-node"))
    o.ranks_per_node = int_in(vm, "ranks-per-node", 1, 4096, "a whole number from 1 to 4096");
  if (vm.count("host-bytes-per-rank")) o.host_bytes_per_rank = size_value(vm, "host-bytes-per-rank");
  if (vm.count("checkpoint-dir")) {
    // Paths as given, each once (a path may hold a comma: no list splitting).
    for (const std::string& dir : vm["checkpoint-dir"].as<std::vector<std::string>>()) {
      if (trim(dir).empty()) bad_value("checkpoint-dir", dir, "a directory (where the job writes its checkpoints)");
      if (std::find(o.checkpoint_dirs.begin(), o.checkpoint_dirs.end(), dir) == o.checkpoint_dirs.end()) {
        o.checkpoint_dirs.push_back(dir);
      }
    }
  }
  if (vm.count("shm-dataloader-bytes")) o.shm_dataloader_bytes = size_value(vm, "shm-dataloader-bytes");
  if (vm.count("nccl-communicators"))
    o.nccl_communicators = int_in(vm, "nccl-communicators", 1, 1024, "a whole number from 1 to 1024");
  o.sysroot = path_option(vm, "sysroot", "a directory holding a captured node's /proc, /sys and /etc");
  o.topology_xml = path_option(vm, "topology-xml", "an hwloc topology XML file");
  o.matrix_dir = path_option(vm, "matrix", "a directory of matrix data files");
  o.json_per_rank_dir = path_option(vm, "json-per-rank", "a directory for each rank's result file");
  if (auto v = str(vm, "mpi")) {
    if (*v != "auto" && *v != "on" && *v != "off") bad_value("mpi", *v, "auto, on or off");
    o.mpi = *v;
  }
  o.config_file = path_option(vm, "config", "a config file");
  if (vm.count("python")) o.python = python_executable(o.python, o.sysroot);
  for (std::string& dir : o.site_packages) {
    dir = given_input("site-packages", dir, o.sysroot, "a directory that exists (where the framework is installed)",
                      false);
  }
  for (std::string& lib : o.cuda_runtimes) {
    lib = given_input("cuda-runtime", lib, o.sysroot, "a CUDA runtime library that exists (or a name to search)", true);
  }
  if (!o.nccl_lib.empty()) {
    o.nccl_lib = given_input("nccl-lib", o.nccl_lib, o.sysroot, "a libnccl that exists (or a name to search)", true);
  }
  return o;
}

/// The options, every rule of theirs checked (a selection that selects no check, for a run or a merge).
Options checked_options(const po::variables_map& vm, Command command) {
  Options o = to_options(vm);
  if (command == Command::Run || command == Command::Merge) validate_selection(o);
  return o;
}

}  // namespace

std::optional<std::uint64_t> parse_count(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  double scale = 1;
  const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (last == 'K' || last == 'M' || last == 'B' || last == 'G' || last == 'T') {
    scale = last == 'K' ? 1e3 : last == 'M' ? 1e6 : last == 'T' ? 1e12 : 1e9;
    text.remove_suffix(1);
  }
  const std::string number(text);
  try {
    std::size_t used = 0;
    const double d = std::stod(number, &used);
    if (used != number.size() || !std::isfinite(d) || d < 0 || d * scale >= 1e18) return std::nullopt;
    return static_cast<std::uint64_t>(std::llround(d * scale));
  } catch (const std::logic_error&) {
    return std::nullopt;
  }
}

std::optional<std::string> parse_target_gpu(std::string_view text) {
  std::string t = to_lower(trim(text));
  for (std::string_view prefix : {"sm_", "compute_"}) {
    if (t.starts_with(prefix)) {
      t.erase(0, prefix.size());
      if (t.find('.') != std::string::npos) return std::nullopt;  // sm_9.0 is no spelling
      break;
    }
  }
  if (t.ends_with("+ptx")) t.erase(t.size() - 4);
  if (!t.empty() && (t.back() == 'a' || t.back() == 'f')) t.pop_back();
  const auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  std::string major, minor;
  if (const std::size_t dot = t.find('.'); dot != std::string::npos) {
    major = t.substr(0, dot);
    minor = t.substr(dot + 1);
    if (major.size() > 2 || minor.size() != 1) return std::nullopt;
  } else {
    if (t.size() < 2 || t.size() > 3) return std::nullopt;  // "9" is ambiguous, "1000" no GPU
    major = t.substr(0, t.size() - 1);
    minor = t.substr(t.size() - 1);
  }
  if (!digits(major) || !digits(minor) || major.front() == '0') return std::nullopt;
  return major + "." + minor;
}

bool is_target_driver(std::string_view text) {
  text = trim(text);
  const std::vector<std::string_view> parts = split(text, '.');
  if (text.empty() || parts.size() > 3) return false;
  for (std::string_view p : parts) {
    if (p.empty() || p.size() > 6 || !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
  }
  return parse_uint(parts.front()).value_or(0) > 0;
}

std::string help_text() {
  std::ostringstream out;
  out << "preflight — pre-flight environment validator for distributed GPU training\n\n"
         "Usage:\n"
         "  preflight [run] [options]   run the checks (default)\n"
         "  preflight list              list every check id with a one-line description\n"
         "  preflight explain CHECK_ID  what a check looks at, why it matters, how to fix each failure\n"
         "  preflight capture [options] DIR | --tar FILE\n"
         "                              record what the checks read on this node (the /proc and /sys files,\n"
         "                              /dev/shm, interfaces, environment without secrets, GPU and library\n"
         "                              facts, hwloc's topology) into a new DIR and/or tar FILE, to judge\n"
         "                              elsewhere with --sysroot DIR\n"
         "  preflight merge [options] FILE...\n"
         "                              one report from per-node (--json) or per-rank (--json-per-rank)\n"
         "                              result files, with the job checks over their facts; a directory\n"
         "                              stands for every *.json file in it (a symlink out of it is refused)\n"
         "  preflight --version | --help\n\n"
         "Examples (every option of `run` is used in one of them):\n"
         "  preflight                                   check this node (profile node)\n"
         "  mpirun -np 16 --map-by ppr:8:node preflight check the job, launched like the job\n"
         "  srun --mpi=pmix --ntasks-per-node=8 preflight --expect-nodes 2 --expect-world-size 16 --expect-gpus 8\n"
         "  preflight --min-busbw 150 --allreduce-bytes 256M     all_reduce floor and message size\n"
         "  mpirun -np 4 preflight --json-per-rank out/ --mpi auto   every rank keeps its own file (preflight merge "
         "out/)\n"
         "  preflight --only 'shm.*,host.*' --skip host.limits --format json\n"
         "  preflight --json r.json --junit r.xml --prom /var/lib/node_exporter/preflight.prom   files for CI and "
         "dashboards\n"
         "  preflight --format junit --strict           WARN fails too; JUnit XML on stdout\n"
         "  preflight --format prometheus --timeout 45  a textfile on stdout, within 45 s\n"
         "  preflight --profile image --target-driver 535.104.05 --target-gpu 9.0   gate an image build (no GPU)\n"
         "  preflight --model-params 70B --zero-stage 2 --ranks-per-node 8 --host-bytes-per-rank 6G --only "
         "host.memory\n"
         "  preflight --model-params 405B --zero-stage 1 --tensor-parallel 8 --pipeline-parallel 16 --ranks-per-node 8 "
         "\\\n"
         "            --expect-world-size 1024 --only host.memory\n"
         "  preflight --shm-dataloader-bytes 1G --nccl-communicators 2 --only shm.capacity\n"
         "  preflight --model-params 70B --zero-stage 3 --checkpoint-dir /lustre/ckpt --checkpoint-dir /scratch --only "
         "host.disk\n"
         "  preflight --site-packages /opt/venv/lib/python3.11/site-packages --python /opt/venv/bin/python\n"
         "  preflight --cuda-runtime /opt/cuda/lib64/libcudart.so.12 --nccl-lib /opt/nccl/lib/libnccl.so.2\n"
         "  preflight capture /captures/node17 --tar node17.tar   capture this node (on the node)\n"
         "  preflight --sysroot /captures/node17         judge a captured node (elsewhere)\n"
         "  preflight --sysroot /hwloc-gather/node17 --topology-xml node17.xml   judge any captured /proc, /sys tree\n"
         "  preflight --matrix /usr/share/preflight/matrix --config /etc/preflight/site.ini\n"
         "  preflight -v --color never --progress never  evidence for every check, no colour, no progress line\n"
         "  preflight merge --json cluster.json node-*.json\n"
         "  preflight explain shm.capacity\n\n"
      << run_options() << "\n"
      << capture_options() << "\n"
      << generic_options()
      << "\n"
         "Config file (--config FILE): one `name = value` per line with the long option names (only = net.*),\n"
         "`#` starts a comment, a value in matching double or single quotes loses them (nothing inside is\n"
         "unescaped), a UTF-8 byte order mark is ignored; the command line wins over the file. It must be a\n"
         "regular file of at most 1 MiB (a FIFO or a device is refused); an error names its line, never its text.\n"
         "--site-packages, --python, --nccl-lib and --cuda-runtime: a relative path is the working directory's\n"
         "(under --sysroot the captured root's), and one that does not exist is a usage error (exit 2); a bare\n"
         "library name (libnccl.so.2) is searched as dlopen does.\n"
         "--only and --skip are checked against the check ids: a glob that matches no check, or a selection\n"
         "that leaves none, is a usage error (exit 2). --timeout is at most 86400 s.\n\n"
         "Exit codes: 0 no FAIL/UNKNOWN (WARN allowed unless --strict) · 1 a FAIL · 2 usage or\n"
         "configuration error · 3 an UNKNOWN, no FAIL · 4 a deadline expired · 5 internal error\n"
         "Under a launcher, bound the launcher too: timeout -k 10 $((T + 30)) mpirun ... preflight --timeout T\n"
         "(mpirun may wait for a lost host's daemon until killed). Codes that are the launcher's, not preflight's:\n"
         "124 timeout(1) expired · 137 SIGKILL (timeout -k, the OOM killer, Slurm's KillWait) · 143 SIGTERM ·\n"
         "205 mpirun lost a host's daemon · 1 with no report, or a report whose summary.exit_code differs.\n";
  return out.str();
}

Cli parse_cli(const std::vector<std::string>& argv) {
  Cli cli;
  std::vector<std::string> rest(argv.begin() + (argv.empty() ? 0 : 1), argv.end());
  if (!rest.empty() && !rest.front().empty() && rest.front().front() != '-') {
    const std::string& cmd = rest.front();
    if (cmd == "run")
      cli.command = Command::Run;
    else if (cmd == "list")
      cli.command = Command::List;
    else if (cmd == "explain")
      cli.command = Command::Explain;
    else if (cmd == "merge")
      cli.command = Command::Merge;
    else if (cmd == "capture")
      cli.command = Command::Capture;
    else
      throw UsageError("unknown command '" + printable(cmd, 60) +
                       "' (commands: run, list, explain, merge, capture; see --help)");
    rest.erase(rest.begin());
  }

  // Boost's parser erases each token it takes from the front of its vector: quadratic in the
  // tokens (a merge of 8192 files named by a shell glob spent 0.1 s there; 65536 would take
  // seconds). In a trailing run of tokens that are not options only the first can be an option's
  // value (no option takes more than one token), so the others are positional arguments as they
  // stand and skip the parser. With "--" on the line the parser sees everything.
  std::vector<std::string> trailing;
  if (std::find(rest.begin(), rest.end(), "--") == rest.end()) {
    std::size_t first = rest.size();
    while (first > 0 && !rest[first - 1].empty() && rest[first - 1].front() != '-') --first;
    if (rest.size() - first >= 2) {
      const auto from = rest.begin() + static_cast<std::ptrdiff_t>(first + 1);
      trailing.assign(std::make_move_iterator(from), std::make_move_iterator(rest.end()));
      rest.erase(from, rest.end());
    }
  }

  po::options_description all;
  all.add(run_options()).add(capture_options()).add(generic_options());
  all.add_options()("args", po::value<std::vector<std::string>>(), "positional arguments");
  po::positional_options_description positional;
  positional.add("args", -1);

  po::variables_map vm;
  po::variables_map command_line_vm;
  ConfigFile config;
  const po::options_description file_options = run_options();  // the config's parsed options point into it
  try {
    po::store(po::command_line_parser(rest).options(all).positional(positional).run(), vm);
    command_line_vm = vm;
    if (vm.count("config")) {
      config.path = vm["config"].as<std::string>();
      config.entries = read_config_file(config.path, file_options);
      store_config(vm, config, file_options);
    }
    po::notify(vm);
  } catch (const po::error_with_option_name& e) {
    throw UsageError(safe_what(e));
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }

  if (vm.count("help")) {
    cli.command = Command::Help;
    return cli;
  }
  if (vm.count("version")) {
    cli.command = Command::Version;
    return cli;
  }
  if (vm.count("args")) cli.args = vm["args"].as<std::vector<std::string>>();
  cli.args.insert(cli.args.end(), std::make_move_iterator(trailing.begin()), std::make_move_iterator(trailing.end()));
  if (cli.command == Command::Explain) {
    if (cli.args.size() != 1) throw UsageError("explain takes exactly one check id (see `preflight list`)");
  } else if (cli.command == Command::Merge) {
    if (cli.args.empty()) throw UsageError("merge needs at least one result file: preflight merge [options] FILE...");
  } else if (cli.command == Command::Capture) {
    if (vm.count("tar")) cli.tar_file = vm["tar"].as<std::string>();
    if (cli.args.size() > 1)
      throw UsageError("capture takes one directory: preflight capture [options] DIR | --tar FILE");
    if (cli.args.empty() && cli.tar_file.empty()) {
      throw UsageError("capture needs a new directory or --tar FILE: preflight capture [options] DIR | --tar FILE");
    }
    if (vm.count("tar") && cli.tar_file.empty()) throw UsageError("--tar '': expected a file name");
    if (vm.count("sysroot")) throw UsageError("capture records the live node: --sysroot cannot be given to it");
    for (const char* report_only : {"json", "junit", "prom", "format", "json-per-rank", "only", "skip", "strict"}) {
      if (vm.count(report_only) && !vm[report_only].defaulted()) {
        throw UsageError(std::string("--") + report_only +
                         " is an option of a run, not of capture (a capture judges nothing: "
                         "judge it with --sysroot DIR)");
      }
    }
  } else if (!cli.args.empty()) {
    throw UsageError("unexpected argument '" + printable(cli.args.front(), 60) + "'");
  }
  if (vm.count("tar") && cli.command != Command::Capture) {
    throw UsageError("--tar is an option of `preflight capture` (see --help)");
  }
  const auto accept = [command = cli.command](const po::variables_map& v) { return checked_options(v, command); };
  try {
    cli.options = accept(vm);
  } catch (const UsageError&) {
    if (config.entries.empty()) throw;
    (void)accept(command_line_vm);  // an error of the command line's own values is its own
    blame_config_line(config, command_line_vm, file_options, [&accept](const po::variables_map& v) { accept(v); });
  }
  return cli;
}

}  // namespace preflight
