// SPDX-License-Identifier: MIT
// The CUDA runtimes, frameworks and NCCL libraries the job will load, found from files only (no
// Python, no dlopen): explicit --cuda-runtime files, the toolkit's version.json/version.txt, the
// libcudart.so.* and libnccl.so.2 files on the loader path (LD_LIBRARY_PATH, /etc/ld.so.conf and its
// includes, the default directories), Python environments (torch/version.py, the nvidia/* wheel
// layouts of CUDA 11/12 and 13 and their *.dist-info versions) and the container variables
// (CUDA_VERSION, NVIDIA_REQUIRE_CUDA). version-matrix.md §5. Every file goes through ctx.fs, and
// symbolic links are resolved inside the sysroot, so --sysroot and the fixtures work.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/cuda_discovery.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

std::string parent_dir(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// readlink through the seam: the link's target as written, or "" if path is not a link.
std::string read_link(const FileSystem& fs, const std::string& path) {
  char buf[PATH_MAX];
  const std::string host = fs.host_path(path);
  const ssize_t n = ::readlink(host.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<std::size_t>(n));
}

// Resolves symbolic links component by component inside the sysroot (an absolute target restarts
// at the sysroot's root, never the host's). The live system needs nothing: the kernel does it.
std::string resolve(const FileSystem& fs, const std::string& path) {
  if (path.empty() || path.front() != '/') return path;
  if (fs.is_live()) {  // the kernel resolves; only used to tell two spellings of one file apart
    char buf[PATH_MAX];
    return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
  }
  std::vector<std::string> pending;
  for (const std::string_view part : split(path, '/')) {
    if (!part.empty()) pending.emplace_back(part);
  }
  std::reverse(pending.begin(), pending.end());
  std::vector<std::string> done;
  int hops = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    std::string current = "/";
    for (const std::string& d : done) current = join_path(current, d);
    current = join_path(current, part);
    const std::string target = read_link(fs, current);
    if (target.empty() || ++hops > 40) {
      done.push_back(std::move(part));
      continue;
    }
    if (target.front() == '/') done.clear();
    std::vector<std::string> parts;
    for (const std::string_view p : split(target, '/')) {
      if (!p.empty()) parts.emplace_back(p);
    }
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) pending.push_back(*it);
  }
  std::string out = "/";
  for (const std::string& d : done) out = join_path(out, d);
  return out;
}

class Discovery {
 public:
  Discovery(const ProbeContext& ctx, RuntimeFacts& out) : m_ctx(ctx), m_out(out) {}

  void run() {
    if (auto v = m_ctx.env.get("NVIDIA_REQUIRE_CUDA")) m_out.nvidia_require_cuda = *v;
    if (!m_ctx.options.nccl_lib.empty()) add_nccl(m_ctx.options.nccl_lib, "--nccl-lib");
    explicit_runtimes();
    toolkits();
    python_environments();  // wheel NCCL candidates come before the loader path's
    loader_path();
    container();
  }

 private:
  const FileSystem& fs() const { return m_ctx.fs; }

  void problem(const std::string& path, const std::string& detail) { m_out.problems.push_back(path + ": " + detail); }

  void searched(const std::string& dir) {
    if (std::find(m_out.searched.begin(), m_out.searched.end(), dir) == m_out.searched.end())
      m_out.searched.push_back(dir);
  }

  void add_runtime(CudaRuntime r) {
    const bool file_kind = r.kind != "container";
    if (file_kind && !m_runtime_paths.insert(resolve(fs(), r.path)).second) return;  // found twice
    m_out.runtimes.push_back(std::move(r));
  }

  void add_nccl(const std::string& path, const std::string& source) {
    if (!m_nccl_paths.insert(path).second) return;
    m_out.nccl_candidates.push_back(LibraryCandidate{path, source});
  }

  Probed<std::vector<std::string>> list(const std::string& dir) const { return fs().list(resolve(fs(), dir)); }
  bool exists(const std::string& path) const { return fs().exists(resolve(fs(), path)); }
  Probed<std::string> read(const std::string& path, std::size_t max = 1u << 20) const {
    return fs().read(resolve(fs(), path), max);
  }

  // The version a versioned library name stands for: its own name's, else its link target's
  // (libcudart.so.12 -> libcudart.so.12.4.127), whichever has more components.
  std::string library_version(const std::string& path, std::string_view stem) const {
    std::string best = soname_version(base_name(path), stem).value_or("");
    std::string current = path;
    for (int hop = 0; hop < 8; ++hop) {
      const std::string target = read_link(fs(), resolve(fs(), parent_dir(current)) + "/" + base_name(current));
      if (target.empty()) break;
      current = target.front() == '/' ? target : join_path(parent_dir(current), target);
      const std::string v = soname_version(base_name(current), stem).value_or("");
      if (Version::parse(v) && (best.empty() || Version::parse(v)->size() > Version::parse(best)->size())) best = v;
    }
    return best;
  }

  void explicit_runtimes() {
    for (const std::string& lib : m_ctx.options.cuda_runtimes) {
      if (!exists(lib)) {
        problem("--cuda-runtime " + lib, "does not exist");
        continue;
      }
      const std::string v = library_version(lib, "libcudart.so");
      if (v.empty()) {
        problem("--cuda-runtime " + lib, "no version in the file name (expected libcudart.so.X[.Y.Z])");
        continue;
      }
      add_runtime(CudaRuntime{v, "explicit", lib, "--cuda-runtime"});
    }
  }

  void toolkit_at(const std::string& root, const std::string& why) {
    const std::string json = join_path(root, "version.json");
    const std::string txt = join_path(root, "version.txt");
    Probed<std::string> text = read(json);
    if (text.ok()) {
      const Probed<std::string> v = parse_cuda_version_json(*text.value());
      if (v.ok())
        add_runtime(CudaRuntime{*v.value(), "toolkit", json, why + ", version.json " + v.source()});
      else
        problem(json, v.error()->detail);
      return;
    }
    if (text.error()->code != ProbeErrc::NotFound) {
      problem(json, text.error()->detail);
      return;
    }
    text = read(txt);
    if (text.ok()) {
      const Probed<std::string> v = parse_cuda_version_txt(*text.value());
      if (v.ok())
        add_runtime(CudaRuntime{*v.value(), "toolkit", txt, why + ", version.txt"});
      else
        problem(txt, v.error()->detail);
      return;
    }
    if (text.error()->code != ProbeErrc::NotFound) {
      problem(txt, text.error()->detail);
      return;
    }
    // A toolkit assembled from the NVIDIA wheels keeps their metadata in <root>/dist-info.
    const std::string dist_dir = join_path(root, "dist-info");
    const auto names = list(dist_dir);
    if (!names.ok()) return;
    for (const std::string& name : *names.value()) {
      const auto d = parse_dist_info_name(name);
      if (!d || d->project.rfind("nvidia-cuda-runtime", 0) != 0 || !Version::parse(d->version)) continue;
      add_runtime(CudaRuntime{d->version, "toolkit", join_path(dist_dir, name), why + ", " + d->project + " dist-info"});
      return;
    }
  }

  void toolkits() {
    toolkit_at("/usr/local/cuda", "/usr/local/cuda");
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
      if (auto dir = m_ctx.env.get(var); dir && !dir->empty() && dir->front() == '/') {
        std::string d = *dir;
        while (d.size() > 1 && d.back() == '/') d.pop_back();
        toolkit_at(d, var);
      }
    }
  }

  // ---- the loader path ----

  void scan_library_dir(const std::string& dir, const std::string& source) {
    searched(dir);
    if (!m_scanned_dirs.insert(resolve(fs(), dir)).second) return;
    const auto names = list(dir);
    if (!names.ok()) return;
    // One runtime per SONAME major in a directory: libcudart.so.12 (what the loader opens) with the
    // version of the most specific name it stands for.
    std::set<std::string> majors;
    for (const std::string& name : *names.value()) {
      const auto v = soname_version(name, "libcudart.so");
      if (v) majors.insert(std::to_string(Version::parse(*v)->major()));
    }
    for (const std::string& major : majors) {
      const std::string soname = "libcudart.so." + major;
      const auto& all = *names.value();
      std::string path, version;
      if (std::find(all.begin(), all.end(), soname) != all.end()) {
        path = join_path(dir, soname);
        version = library_version(path, "libcudart.so");
      }
      for (const std::string& name : all) {  // a fuller name of the same major in the directory
        const auto v = soname_version(name, "libcudart.so");
        if (!v || std::to_string(Version::parse(*v)->major()) != major) continue;
        if (path.empty()) path = join_path(dir, name);
        if (version.empty() || Version::parse(*v)->size() > Version::parse(version)->size()) version = *v;
      }
      add_runtime(CudaRuntime{version, "loader", path, source});
    }
    const auto& all = *names.value();
    if (std::find(all.begin(), all.end(), "libnccl.so.2") != all.end()) add_nccl(join_path(dir, "libnccl.so.2"), source);
  }

  void ld_so_conf(const std::string& file, int depth, std::vector<std::string>& dirs) {
    if (depth > 8) return;
    const Probed<std::string> text = read(file);
    if (!text.ok()) {
      if (text.error()->code != ProbeErrc::NotFound) problem(file, text.error()->detail);
      return;
    }
    if (text.value()->find('\0') != std::string::npos) {
      problem(file, "binary contents");
      return;
    }
    const LdSoConf conf = parse_ld_so_conf(*text.value());
    for (const std::string& d : conf.dirs) {
      if (!d.empty() && d.front() == '/') dirs.push_back(d);
    }
    for (const std::string& inc : conf.includes) {
      const std::string pattern = inc.front() == '/' ? inc : join_path(parent_dir(file), inc);
      const std::string dir = parent_dir(pattern), glob = base_name(pattern);
      if (glob.find_first_of("*?") == std::string::npos) {
        ld_so_conf(pattern, depth + 1, dirs);
        continue;
      }
      const auto names = list(dir);
      if (!names.ok()) continue;
      for (const std::string& name : *names.value()) {
        if (glob_match(glob, name)) ld_so_conf(join_path(dir, name), depth + 1, dirs);
      }
    }
  }

  void loader_path() {
    if (auto v = m_ctx.env.get("LD_LIBRARY_PATH")) {
      for (const std::string& dir : split_library_path(*v)) {
        if (dir.front() == '/') scan_library_dir(dir, "LD_LIBRARY_PATH");
      }
    }
    std::vector<std::string> conf_dirs;
    ld_so_conf("/etc/ld.so.conf", 0, conf_dirs);
    for (const std::string& dir : conf_dirs) scan_library_dir(dir, "ld.so.conf");
    for (const char* dir : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"})
      scan_library_dir(dir, "default");
  }

  // ---- Python environments ----

  // <prefix>/lib/python3.*/<leaf>
  std::vector<std::string> python_lib_dirs(const std::string& prefix, const std::string& leaf) const {
    std::vector<std::string> out;
    const std::string lib = join_path(prefix, "lib");
    const auto names = list(lib);
    if (!names.ok()) return out;
    for (const std::string& name : *names.value()) {
      if (glob_match("python3*", name)) out.push_back(join_path(join_path(lib, name), leaf));
    }
    return out;
  }

  std::vector<std::string> environments() {
    std::vector<std::string> dirs;
    for (const std::string& d : m_ctx.options.site_packages) {
      if (!exists(d)) problem("--site-packages " + d, "does not exist");
      dirs.push_back(d);
    }
    if (!m_ctx.options.python.empty()) {
      const std::string& exe = m_ctx.options.python;
      const std::string bin = parent_dir(exe);
      if (base_name(bin) != "bin") {
        problem("--python " + exe, "not in a <prefix>/bin directory; use --site-packages");
      } else {
        const std::string prefix = parent_dir(bin);
        std::vector<std::string> found;
        if (auto xy = python_version_from_name(base_name(exe))) {
          found.push_back(prefix + "/lib/python" + *xy + "/site-packages");
        } else {
          found = python_lib_dirs(prefix, "site-packages");
        }
        found.erase(std::remove_if(found.begin(), found.end(), [&](const std::string& d) { return !exists(d); }),
                    found.end());
        if (found.empty()) problem("--python " + exe, "no " + prefix + "/lib/python3.*/site-packages");
        dirs.insert(dirs.end(), found.begin(), found.end());
      }
    }
    if (!dirs.empty()) return dirs;
    for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
      if (auto prefix = m_ctx.env.get(var); prefix && !prefix->empty() && prefix->front() == '/') {
        for (const std::string& d : python_lib_dirs(*prefix, "site-packages")) dirs.push_back(d);
      }
    }
    for (const std::string& d : python_lib_dirs("/usr/local", "dist-packages")) dirs.push_back(d);
    for (const std::string& d : python_lib_dirs("/usr/local", "site-packages")) dirs.push_back(d);
    dirs.emplace_back("/usr/lib/python3/dist-packages");
    if (auto home = m_ctx.env.get("HOME"); home && !home->empty() && home->front() == '/') {
      for (const std::string& d : python_lib_dirs(*home + "/.local", "site-packages")) dirs.push_back(d);
    }
    return dirs;
  }

  // The *.dist-info directories of one site-packages, parsed.
  struct Dist {
    DistInfoName name;
    std::string dir;
  };

  std::vector<Dist> dist_infos(const std::string& site, const std::vector<std::string>& names) {
    std::vector<Dist> out;
    for (const std::string& n : names) {
      if (n.size() < 10 || n.substr(n.size() - 10) != ".dist-info") continue;
      const std::string dir = join_path(site, n);
      if (auto parsed = parse_dist_info_name(n)) {
        out.push_back(Dist{*parsed, dir});
        continue;
      }
      // Fall back on METADATA's Name:/Version: when the directory name does not parse.
      const Probed<std::string> meta = read(join_path(dir, "METADATA"));
      if (!meta.ok()) continue;
      auto name = metadata_field(*meta.value(), "Name");
      auto version = metadata_field(*meta.value(), "Version");
      if (name && version) out.push_back(Dist{DistInfoName{normalize_project_name(*name), *version}, dir});
    }
    return out;
  }

  // The dist-info of a wheel: a project starting with prefix whose version's major is major (if given).
  static const Dist* find_dist(const std::vector<Dist>& dists, std::string_view prefix, const std::string& major) {
    for (const Dist& d : dists) {
      if (d.name.project.rfind(prefix, 0) != 0) continue;
      if (!major.empty()) {
        const auto v = Version::parse(d.name.version);
        if (!v || std::to_string(v->major()) != major) continue;
      }
      return &d;
    }
    return nullptr;
  }

  void torch(const std::string& site, const std::vector<Dist>& dists) {
    const std::string file = site + "/torch/version.py";
    const Probed<std::string> text = read(file, 1u << 20);
    if (!text.ok()) {
      if (text.error()->code != ProbeErrc::NotFound) problem(file, text.error()->detail);
      return;
    }
    const Probed<TorchVersionPy> parsed = parse_torch_version_py(*text.value());
    if (!parsed.ok()) {
      problem(file, parsed.error()->detail);
      return;
    }
    const TorchVersionPy& t = *parsed.value();
    m_out.frameworks.push_back(FrameworkBuild{"torch", t.version, t.cuda, {}, file});
    if (t.cuda.empty()) return;  // a CPU (or ROCm) build loads no CUDA runtime
    std::string detail = "torch " + t.version;
    for (const Dist& d : dists) {
      if (d.name.project != "torch") continue;
      const Probed<std::string> meta = read(d.dir + "/METADATA");
      if (meta.ok()) {
        const std::vector<std::string> pins = requires_dist_pins(*meta.value(), "nvidia-");
        if (!pins.empty()) detail += "; requires " + join(pins, ", ");
      }
      break;
    }
    add_runtime(CudaRuntime{t.cuda, "torch", file, detail});
  }

  void wheel_cudart(const std::string& site, const std::string& rel_dir, const std::vector<Dist>& dists) {
    const std::string dir = join_path(site, rel_dir);
    const auto names = list(dir);
    if (!names.ok()) return;
    for (const std::string& name : *names.value()) {
      const auto file_version = soname_version(name, "libcudart.so");
      if (!file_version) continue;
      const std::string major = std::to_string(Version::parse(*file_version)->major());
      const std::string path = join_path(dir, name);
      if (const Dist* d = find_dist(dists, "nvidia-cuda-runtime", major)) {
        add_runtime(CudaRuntime{d->name.version, "wheel", path, d->name.project + " " + d->name.version});
      } else {
        problem(path, "no nvidia-cuda-runtime " + major + ".x *.dist-info beside it; version from the file name");
        add_runtime(CudaRuntime{*file_version, "wheel", path, "file name only"});
      }
    }
  }

  void site_packages(const std::string& site) {
    searched(site);
    const std::string real = resolve(fs(), site);
    if (!m_scanned_sites.insert(real).second) return;
    const auto names = list(site);
    if (!names.ok()) {
      if (names.error()->code != ProbeErrc::NotFound) problem(site, names.error()->detail);
      return;
    }
    const std::vector<Dist> dists = dist_infos(site, *names.value());
    torch(site, dists);
    wheel_cudart(site, "nvidia/cuda_runtime/lib", dists);  // CUDA 11 and 12 wheels
    wheel_cudart(site, "nvidia/cu13/lib", dists);          // CUDA 13 wheels
    const std::string nccl = site + "/nvidia/nccl/lib/libnccl.so.2";
    if (exists(nccl)) {
      const Dist* d = find_dist(dists, "nvidia-nccl", "");
      add_nccl(nccl, d ? "wheel " + d->name.project + " " + d->name.version : std::string("wheel"));
    }
  }

  void python_environments() {
    for (const std::string& site : environments()) site_packages(site);
  }

  // ---- container variables ----

  void container() {
    const auto v = m_ctx.env.get("CUDA_VERSION");
    if (!v) return;
    if (!Version::parse(*v)) {
      problem("CUDA_VERSION", "not a version: \"" + printable(*v, 40) + "\"");
      return;
    }
    std::string detail = "CUDA_VERSION";
    if (auto cudart = m_ctx.env.get("NV_CUDA_CUDART_VERSION")) detail += ", NV_CUDA_CUDART_VERSION " + *cudart;
    add_runtime(CudaRuntime{*v, "container", "CUDA_VERSION", detail});
  }

  const ProbeContext& m_ctx;
  RuntimeFacts& m_out;
  std::set<std::string> m_runtime_paths, m_nccl_paths, m_scanned_dirs, m_scanned_sites;
};

}  // namespace

void probe_cuda_runtime(const ProbeContext& ctx, RankFacts& facts) {
  RuntimeFacts out;
  try {
    Discovery(ctx, out).run();
  } catch (const std::exception& e) {
    out.problems.push_back(std::string("cuda runtime discovery stopped: ") + e.what());
  }
  facts.gpu.runtime = std::move(out);
}

}  // namespace preflight
