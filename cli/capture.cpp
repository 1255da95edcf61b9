// SPDX-License-Identifier: MIT
#include "cli/capture.hpp"
#include "core/exit_code.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "core/env_grammar.hpp"
#include "core/redact.hpp"
#include "core/text.hpp"
#include "job/run.hpp"
#include "probes/probe.hpp"
#include "sys/capture.hpp"
#include "sys/host_link.hpp"
#include "sys/safe_path.hpp"

extern char** environ;

namespace preflight {
namespace {

constexpr std::size_t kMaxTarEntries = 1000000;
constexpr int kMaxTarDepth = 64;

std::string parent_of(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const std::size_t slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

/// A directory can be written when a file can be made in it (access() says yes to root on a
/// read-only mount's directory only through EROFS; making a file is the honest test).
bool can_write_in(const std::string& dir, std::string& why) {
  std::string probe = dir + "/.preflight-write-test-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    why = std::strerror(errno);
    return false;
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

/// `path` walked as the files preflight writes are (sys/safe_path.hpp): a symlink, directory or
/// file another user planted in a sticky world-writable directory on the way is refused (exit 2).
SafePath walked(const std::string& option, const std::string& path) {
  SafePath where = resolve_path(path);
  const std::string shown = option + " '" + printable(path, 200) + "': ";
  if (!where.refusal.empty()) throw UsageError(shown + where.refusal);
  if (const std::string planted = planted_entry(where); !planted.empty()) throw UsageError(shown + planted);
  if (where.error != 0 && where.error != ENOENT) throw UsageError(option + " " + where.problem());
  return where;
}

bool is_empty_directory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) throw UsageError("capture '" + printable(dir, 200) + "': " + std::strerror(errno));
  bool empty = true;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

/// DIR: a new directory in an existing one, or an existing empty directory this process may use.
void validate_capture_dir(const std::string& dir) {
  const std::string shown = printable(dir, 200);
  const SafePath where = walked("capture", dir);
  if (where.exists) {
    if (!S_ISDIR(where.st.st_mode)) throw UsageError("capture '" + shown + "': exists and is not a directory");
    if (!is_empty_directory(dir))
      throw UsageError("capture '" + shown +
                       "': exists and is not empty (a capture goes into a new or empty directory)");
    std::string why;
    if (!can_write_in(dir, why)) throw UsageError("capture '" + shown + "': not writable (" + why + ")");
    return;
  }
  const std::string parent = parent_of(dir);
  if (where.error == ENOENT) {
    throw UsageError("capture '" + shown + "': its parent directory '" + printable(parent, 200) + "' does not exist");
  }
  std::string why;
  if (!can_write_in(parent, why)) {
    throw UsageError("capture '" + shown + "': cannot create it in '" + printable(parent, 200) + "' (" + why + ")");
  }
}

/// FILE: a new name (a capture never overwrites a file) in an existing directory.
void validate_tar_file(const std::string& tar_file) {
  const std::string shown = printable(tar_file, 200);
  const SafePath where = walked("--tar", tar_file);
  struct stat st {};
  if (where.exists || ::lstat(tar_file.c_str(), &st) == 0)
    throw UsageError("--tar '" + shown + "': exists (a capture never overwrites a file)");
  const std::string parent = parent_of(tar_file);
  if (where.error == ENOENT) {
    throw UsageError("--tar '" + shown + "': its directory '" + printable(parent, 200) + "' does not exist");
  }
  std::string why;
  if (!can_write_in(parent, why))
    throw UsageError("--tar '" + shown + "': cannot write in '" + printable(parent, 200) + "' (" + why + ")");
}

/// Every check of DIR and FILE happens before anything is probed (exit 2).
void validate_targets(const std::string& dir, const std::string& tar_file) {
  if (!dir.empty()) validate_capture_dir(dir);
  if (!tar_file.empty()) validate_tar_file(tar_file);
}

std::string write_file(const std::string& path, const std::string& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return path + ": " + std::strerror(errno);
  std::size_t put = 0;
  while (put < data.size()) {
    const ssize_t n = ::write(fd, data.data() + put, data.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return path + ": " + std::strerror(err);
    }
    put += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return path + ": " + std::strerror(errno);
  return {};
}

std::string dump(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// --- tar (POSIX.1-2001 pax: ustar headers, with an extended header for long names) -------------

struct TarOut {
  int fd;
  std::string error;
  bool put(const char* data, std::size_t size) {
    std::size_t done = 0;
    while (done < size && error.empty()) {
      const ssize_t n = ::write(fd, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        error = std::string("write: ") + std::strerror(errno);
      else
        done += static_cast<std::size_t>(n);
    }
    return error.empty();
  }
  bool pad(std::size_t size) {
    static const char zeros[512] = {};
    const std::size_t rest = (512 - size % 512) % 512;
    return put(zeros, rest);
  }
};

void octal(char* field, std::size_t width, std::uint64_t value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(value));
}

bool header(TarOut& out, const std::string& name, char type, std::uint64_t size, unsigned mode, std::uint64_t mtime,
            const std::string& link) {
  char h[512] = {};
  std::memcpy(h, name.data(), std::min<std::size_t>(name.size(), 100));
  octal(h + 100, 8, mode & 07777);
  octal(h + 108, 8, 0);
  octal(h + 116, 8, 0);
  octal(h + 124, 12, size);
  octal(h + 136, 12, mtime);
  h[156] = type;
  std::memcpy(h + 157, link.data(), std::min<std::size_t>(link.size(), 100));
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  std::memcpy(h + 265, "root", 4);
  std::memcpy(h + 297, "root", 4);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h + 148, 8, "%06o", sum);
  h[155] = ' ';
  return out.put(h, sizeof h);
}

std::string pax_record(const std::string& key, const std::string& value) {
  const std::size_t base = key.size() + value.size() + 3;  // ' ', '=', '\n'
  std::size_t len = base + 1;
  while (std::to_string(len).size() + base != len) len = std::to_string(len).size() + base;
  return std::to_string(len) + " " + key + "=" + value + "\n";
}

bool entry(TarOut& out, const std::string& name, char type, std::uint64_t size, const struct stat& st,
           const std::string& link) {
  std::string pax;
  if (name.size() > 100) pax += pax_record("path", name);
  if (link.size() > 100) pax += pax_record("linkpath", link);
  if (!pax.empty()) {
    if (!header(out, "PaxHeader", 'x', pax.size(), 0644, static_cast<std::uint64_t>(st.st_mtime), "") ||
        !out.put(pax.data(), pax.size()) || !out.pad(pax.size())) {
      return false;
    }
  }
  return header(out, name.substr(0, 100), type, size, st.st_mode,
                static_cast<std::uint64_t>(std::max<time_t>(st.st_mtime, 0)), link.substr(0, 100));
}

bool add_tree(TarOut& out, const std::string& root, const std::string& rel, int depth, std::size_t& count) {
  if (depth > kMaxTarDepth) {
    out.error = rel + ": deeper than " + std::to_string(kMaxTarDepth) + " levels";
    return false;
  }
  const std::string dir = rel.empty() ? root : root + "/" + rel;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    out.error = dir + ": " + std::strerror(errno);
    return false;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (++count > kMaxTarEntries) {
      out.error = "more than " + std::to_string(kMaxTarEntries) + " entries";
      return false;
    }
    const std::string r = rel.empty() ? name : rel + "/" + name;
    const std::string path = root + "/" + r;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (!entry(out, r + "/", '5', 0, st, "") || !add_tree(out, root, r, depth + 1, count)) return false;
    } else if (S_ISLNK(st.st_mode)) {
      const std::optional<std::string> target = read_host_link(path);
      if (!target || target->empty()) continue;
      if (!entry(out, r, '2', 0, st, *target)) return false;
    } else if (S_ISREG(st.st_mode)) {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0) {
        out.error = path + ": " + std::strerror(errno);
        return false;
      }
      std::string data;
      char buf[65536];
      for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        data.append(buf, static_cast<std::size_t>(n));
      }
      ::close(fd);
      if (!entry(out, r, '0', data.size(), st, "") || !out.put(data.data(), data.size()) || !out.pad(data.size()))
        return false;
    }
  }
  return true;
}

void remove_tree(const std::string& path, int depth = 0) {
  struct stat st {};
  if (depth > kMaxTarDepth || ::lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    if (DIR* d = ::opendir(path.c_str())) {
      std::vector<std::string> names;
      while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
      }
      ::closedir(d);
      for (const std::string& n : names) remove_tree(path + "/" + n, depth + 1);
    }
    ::rmdir(path.c_str());
  } else {
    ::unlink(path.c_str());
  }
}

}  // namespace

std::string write_tar(const std::string& dir, int fd) {
  TarOut out{fd, {}};
  std::size_t count = 0;
  if (!add_tree(out, dir, "", 0, count)) return out.error.empty() ? "write failed" : out.error;
  static const char zeros[1024] = {};
  out.put(zeros, sizeof zeros);
  return out.error;
}

int capture_command(const Options& options, const std::string& dir_arg, const std::string& tar_file,
                    std::chrono::steady_clock::time_point start) {
  validate_targets(dir_arg, tar_file);

  std::string dir = dir_arg;
  bool temporary = false;
  if (dir.empty()) {
    // --tar alone: the tree is built next to the archive and removed once it is written.
    dir = parent_of(tar_file) + "/.preflight-capture-XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) {
      std::cerr << "preflight: error: cannot create a working directory next to '" << printable(tar_file, 200)
                << "': " << std::strerror(errno) << "\n";
      return to_int(ExitCode::Usage);
    }
    temporary = true;
  } else if (const SafePath made = make_directories(dir, 0755); !made.problem().empty()) {
    // Made as it was checked: a directory another user put there meanwhile is refused, not used.
    std::cerr << "preflight: error: capture '" << printable(dir, 200) << "': " << made.problem() << "\n";
    return to_int(ExitCode::Usage);
  }
  struct Cleanup {
    bool on;
    std::string dir;
    ~Cleanup() {
      if (on) remove_tree(dir);
    }
  } cleanup{temporary, dir};

  auto recorder = std::make_shared<FsRecorder>(dir);
  const unsigned uid = ::getuid();
  recorder->filter(
      "/etc/passwd", [uid](const std::string& passwd) { return passwd_entry(passwd, uid); },
      "only the entry of uid " + std::to_string(uid) +
          ", the user the job runs as (whose home holds NCCL's ~/.nccl.conf): no other account is recorded");
  recorder->filter_every(  // binary files (a NUL in them: PCI config space): secret lines, not URLs
      [](const std::string& text) { return redact_secret_lines(text, text.find('\0') == std::string::npos); },
      "the values of secret NAME=value lines and the credentials in URLs are redacted "
      "(a password in ~/.nccl.conf, for one)");
  const EnvSnapshot env = EnvSnapshot::capture(environ);
  // Every file the capture writes goes through the redaction of every output (core/redact.hpp).
  const Redactor redactor(env);
  const auto redacted = [&redactor](nlohmann::json doc) {
    redactor.json(doc);
    return doc;
  };
  const auto deadline = start + std::chrono::milliseconds(static_cast<long long>(options.timeout_s * 900.0));
  Options probe_options = options;
  probe_options.sysroot.clear();
  probe_options.topology_xml.clear();  // the capture is this node's
  const ProbeRun probes = run_probes(probe_options, env, deadline, RankFacts{}, {}, {}, recorder);
  const RankFacts& f = probes.facts;

  std::vector<std::string> problems = recorder->problems();
  nlohmann::json held = nlohmann::json::object();
  auto fact = [&](std::string_view name, const nlohmann::json& doc) {
    for (const CaptureFactFile& file : capture_fact_files()) {
      if (file.name != name) continue;
      if (file.path.find('/', 1) != std::string_view::npos) ::mkdir((dir + "/facts").c_str(), 0755);
      const std::string error = write_file(dir + std::string(file.path), dump(redacted(doc)));
      if (!error.empty()) {
        problems.push_back(error);
      } else {
        held[std::string(name)] = {{"file", std::string(file.path.substr(1))}, {"holds", std::string(file.holds)}};
      }
    }
  };
  const nlohmann::json env_doc = captured_env_json(env);
  fact("env", env_doc);
  fact("shm", {{"usage", f.shm.usage}, {"alloc", f.shm.alloc}});
  fact("net", {{"interfaces", f.net.interfaces}, {"master", f.net.master}});
  fact("gpu", f.gpu.driver);
  fact("nccl", {{"nccl", f.gpu.nccl}});
  fact("cuda_runtime", f.gpu.runtime);
  fact("process", {{"cpus", f.affinity.cpus}, {"mempolicy", f.affinity.mempolicy}});
  fact("disk", {{"disk", f.disk}});
  if (const std::string error = export_topology_xml(dir + "/topology.xml"); error.empty()) {
    held["topology"] = {{"file", "topology.xml"}, {"holds", "hwloc's XML export of the machine (lstopo --of xml)"}};
  } else {
    problems.push_back("topology.xml: " + error);
  }

  // What could not be read on this node, and why: the judge gets the same error, not "missing".
  nlohmann::json unreadable = nlohmann::json::object();
  for (const auto& [path, e] : recorder->failures())
    unreadable[path] = {{"error", to_string(e.code)}, {"detail", e.detail}};
  nlohmann::json manifest = {
      {"format", std::string(kCaptureFormat)},
      {"version", kCaptureFormatVersion},
      {"preflight", PREFLIGHT_VERSION},
      {"taken_at", utc_now()},
      {"hostname", f.identity.hostname},
      {"complete", !probes.expired},
      {"facts", held},
      {"files", recorder->recorded()},
      {"dropped_env_values", env_doc.at("dropped_values")},
      {"filtered_files", recorder->filtered()},
      {"unreadable", unreadable},
      {"problems", problems},
  };
  if (probes.expired) manifest["incident"] = probes.incident;
  if (const std::string error = write_file(dir + std::string(kCaptureManifest), dump(redacted(manifest)));
      !error.empty()) {
    std::cerr << "preflight: error: " << error << "\n";
    return to_int(ExitCode::Internal);
  }

  if (!tar_file.empty()) {
    const int fd = ::open(tar_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::cerr << "preflight: error: --tar '" << printable(tar_file, 200) << "': " << std::strerror(errno) << "\n";
      return to_int(ExitCode::Internal);
    }
    std::string error = write_tar(dir, fd);
    if (::close(fd) != 0 && error.empty()) error = std::strerror(errno);
    if (!error.empty()) {
      ::unlink(tar_file.c_str());
      std::cerr << "preflight: error: --tar '" << printable(tar_file, 200) << "': " << error << "\n";
      return to_int(ExitCode::Internal);
    }
  }

  std::string where = temporary ? std::string() : "'" + printable(dir_arg, 200) + "'";
  if (!tar_file.empty()) where += (where.empty() ? "" : " and ") + std::string("'") + printable(tar_file, 200) + "'";
  std::vector<std::string> names;
  for (const auto& [name, _] : held.items()) names.push_back(name);
  std::cout << "preflight: captured " << recorder->recorded().size() << " paths and the facts " << join(names, ", ")
            << " into " << where << "; judge it with `preflight --sysroot DIR`"
            << (tar_file.empty() ? "" : " (after `tar -xf FILE -C DIR`)") << "\n";
  if (!problems.empty())
    std::cerr << "preflight: " << problems.size() << " problem(s) while capturing: see preflight-capture.json\n";
  std::cout.flush();
  if (probes.expired) {
    std::cerr << "preflight: the capture is incomplete: " << probes.incident << "\n";
    std::cerr.flush();
    cleanup.on = false;
    if (temporary) remove_tree(dir);
    ::_exit(to_int(ExitCode::Deadline));  // a probe is still running on its thread
  }
  return 0;
}

}  // namespace preflight
