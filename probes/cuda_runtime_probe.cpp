// SPDX-License-Identifier: MIT
// The CUDA runtimes, frameworks and NCCL libraries on the node, and which of them the job loads,
// found from files (no framework import, no dlopen): Python environments (torch/version.py; the
// libcudart and libnccl torch's own library needs, resolved by soname the way ld.so would from its
// DT_RPATH/DT_RUNPATH, LD_LIBRARY_PATH, ld.so.conf and the default directories; the nvidia/* wheel
// layouts of CUDA 11/12 and 13 and their *.dist-info versions), explicit --cuda-runtime files, the
// toolkit's version.json/version.txt, the libcudart.so.* and libnccl.so.2 files on the loader path
// and the container variables (CUDA_VERSION, NVIDIA_REQUIRE_CUDA). --python
// EXE is asked for its sys.path in a contained child with a deadline. Every file goes through
// ctx.fs, and symbolic links are resolved inside the sysroot, so --sysroot and the fixtures work.
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/cuda_discovery.hpp"
#include "core/elf_dynamic.hpp"
#include "core/elf_symbols.hpp"
#include "core/fatbin.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "probes/probe.hpp"
#include "sys/contained.hpp"
#include "sys/safe_path.hpp"

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

// One spelling for each file, to tell two spellings of one file apart: its canonical path inside
// the root (the seam resolves every link there, an absolute target at the root, never the host's),
// or the path as written when some component does not exist (a read of it then fails inside the
// root too).
std::string resolve(const FileSystem& fs, const std::string& path) {
  if (path.empty() || path.front() != '/') return path;
  const Probed<std::string> real = fs.real_path(path);
  return real.ok() ? *real.value() : path;
}

constexpr const char* kDefaultDirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"};

// The version in a libcudart file name: "libcudart.so.12.4.127" -> "12.4.127"; the hashed copy a
// wheel bundles, "libcudart-e409450e.so.11.0" -> "11.0".
std::optional<std::string> cudart_name_version(const std::string& name) {
  if (auto v = soname_version(name, "libcudart.so")) return v;
  if (!name.starts_with("libcudart-")) return std::nullopt;
  const std::size_t so = name.find(".so.");
  if (so == std::string::npos) return std::nullopt;
  const std::string v = name.substr(so + 4);
  if (!Version::parse(v)) return std::nullopt;
  return v;
}

// The SONAME of a CUDA version's libcudart: libcudart.so.12 from CUDA 12 on, libcudart.so.11.0 for
// all of CUDA 11, libcudart.so.10.2 before (the minor was part of it).
std::string cudart_soname_for(const Version& cuda) {
  if (cuda.major() >= 12) return "libcudart.so." + std::to_string(cuda.major());
  if (cuda.major() == 11) return "libcudart.so.11.0";
  return "libcudart.so." + cuda.truncated(2).str();
}

// What the job's interpreter is asked, run as EXE -B -S -c: the sys.path its `site` would build
// (PYTHONPATH, PYTHONHOME, PYTHONNOUSERSITE, PYTHONUSERBASE, a venv's pyvenv.cfg, the .pth path
// lines), without running anything but the standard library: the script's directory ("") is
// dropped before the first import, .pth `import` lines and sitecustomize/usercustomize are skipped,
// and `import torch` is only located (importlib.util.find_spec), never run.
constexpr const char* kAskPython =
    "import sys\n"
    "if sys.path and sys.path[0] == '':\n    del sys.path[0]\n"
    "import os, site\n"
    "def addpackage(sitedir, name, known_paths):\n"
    "    reset = known_paths is None\n"
    "    if reset:\n        known_paths = site._init_pathinfo()\n"
    "    try:\n"
    "        f = open(os.path.join(sitedir, name), encoding='utf-8', errors='surrogateescape')\n"
    "    except OSError:\n        return known_paths\n"
    "    with f:\n"
    "        for line in f:\n"
    "            if line.startswith('#') or line.startswith(('import ', 'import\\t')) or not line.strip():\n"
    "                continue\n"
    "            d, dircase = site.makepath(sitedir, line.rstrip())\n"
    "            if dircase not in known_paths and os.path.exists(d):\n"
    "                sys.path.append(d)\n                known_paths.add(dircase)\n"
    "    return None if reset else known_paths\n"
    "site.addpackage = addpackage\n"
    "site.execsitecustomize = lambda: None\n"
    "site.execusercustomize = lambda: None\n"
    "site.main()\n"
    "import importlib.util, json\n"
    "try:\n    spec = importlib.util.find_spec('torch')\n    t = spec.origin if spec and spec.origin else ''\n"
    "except Exception:\n    t = ''\n"
    "try:\n    s = site.getsitepackages()\nexcept Exception:\n    s = []\n"
    "try:\n    u = site.getusersitepackages() if site.ENABLE_USER_SITE else ''\nexcept Exception:\n    u = ''\n"
    "print(json.dumps({'version': sys.version.split()[0], 'prefix': sys.prefix, 'path': sys.path, "
    "'site': s, 'user_site': u, 'torch': t}))\n";

class Discovery {
 public:
  Discovery(const ProbeContext& ctx, RuntimeFacts& out) : m_ctx(ctx), m_out(out) {}

  void run() {
    if (auto v = m_ctx.env.get("NVIDIA_REQUIRE_CUDA")) m_out.nvidia_require_cuda = *v;
    if (!m_ctx.options.nccl_lib.empty()) add_nccl(m_ctx.options.nccl_lib, "--nccl-lib", "--nccl-lib");
    loader_dirs();
    python_environments();  // the frameworks first: what they load decides, and their NCCL comes first
    explicit_runtimes();
    toolkits();
    loader_path();
    container();
    assign_loaded_by();
  }

 private:
  const FileSystem& fs() const { return m_ctx.fs; }

  void problem(const std::string& path, const std::string& detail) { m_out.problems.push_back(path + ": " + detail); }

  void searched(const std::string& dir) {
    if (std::find(m_out.searched.begin(), m_out.searched.end(), dir) == m_out.searched.end())
      m_out.searched.push_back(dir);
  }

  // A searched directory that does not exist; every one of them absent is a tree without the node's
  // libraries, not a node without a runtime.
  void absent(const std::string& dir) {
    if (std::find(m_out.absent.begin(), m_out.absent.end(), dir) == m_out.absent.end()) m_out.absent.push_back(dir);
  }

  // Adds a runtime unless its file is one already listed (each runtime once); returns its index.
  std::size_t add_runtime(CudaRuntime r) {
    if (r.kind != "container") {
      const std::string real = resolve(fs(), r.path);
      if (auto it = m_runtime_index.find(real); it != m_runtime_index.end()) return it->second;
      m_runtime_index[real] = m_out.runtimes.size();
    }
    m_out.runtimes.push_back(std::move(r));
    return m_out.runtimes.size() - 1;
  }

  void add_nccl(const std::string& path, const std::string& source, const std::string& loaded_by = {}) {
    const std::string real = resolve(fs(), path);
    for (LibraryCandidate& c : m_out.nccl_candidates) {
      if (resolve(fs(), c.path) != real) continue;
      if (c.loaded_by.empty()) c.loaded_by = loaded_by;
      return;
    }
    m_out.nccl_candidates.push_back(LibraryCandidate{path, source, loaded_by});
  }

  Probed<std::vector<std::string>> list(const std::string& dir) const { return fs().list(resolve(fs(), dir)); }
  bool exists(const std::string& path) const { return fs().exists(resolve(fs(), path)); }
  Probed<std::string> read(const std::string& path, std::size_t max = 1u << 20) const {
    return fs().read(resolve(fs(), path), max);
  }

  // The version a versioned library name stands for: its own name's, else its link target's
  // (libcudart.so.12 -> libcudart.so.12.4.127), whichever has more components.
  std::string library_version(const std::string& path, std::string_view stem) const {
    auto of = [stem](const std::string& name) -> std::string {
      if (stem == "libcudart.so") return cudart_name_version(name).value_or("");
      return soname_version(name, stem).value_or("");
    };
    std::string best = of(base_name(path));
    std::string current = path;
    for (int hop = 0; hop < 8; ++hop) {
      const Probed<std::string> link = fs().read_link(resolve(fs(), parent_dir(current)) + "/" + base_name(current));
      if (!link.ok() || link.value()->empty()) break;
      const std::string& target = *link.value();
      current = target.front() == '/' ? target : join_path(parent_dir(current), target);
      const std::string v = of(base_name(current));
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
      const std::size_t i = add_runtime(CudaRuntime{v, "explicit", lib, "--cuda-runtime", "--cuda-runtime"});
      if (m_out.runtimes[i].loaded_by.empty()) m_out.runtimes[i].loaded_by = "--cuda-runtime";
    }
  }

  // The toolkit's own libcudart files (lib64, lib, targets/*/lib): listed as the toolkit's row, so
  // the same file found again on the loader path is not a second runtime.
  std::vector<std::string> toolkit_libraries(const std::string& root) const {
    std::vector<std::string> dirs = {join_path(root, "lib64"), join_path(root, "lib")};
    if (const auto targets = list(join_path(root, "targets")); targets.ok()) {
      for (const std::string& t : *targets.value()) dirs.push_back(join_path(root, "targets/" + t + "/lib"));
    }
    std::vector<std::string> out;
    for (const std::string& dir : dirs) {
      const auto names = list(dir);
      if (!names.ok()) continue;
      for (const std::string& name : *names.value()) {
        if (soname_version(name, "libcudart.so")) out.push_back(join_path(dir, name));
      }
    }
    return out;
  }

  void add_toolkit(const std::string& root, CudaRuntime r) {
    const std::vector<std::string> libs = toolkit_libraries(root);
    for (const std::string& lib : libs) {  // a framework already loads this toolkit's runtime: one row
      if (auto it = m_runtime_index.find(resolve(fs(), lib)); it != m_runtime_index.end()) {
        CudaRuntime& known = m_out.runtimes[it->second];
        if (known.kind != "toolkit" && known.detail.find("toolkit at") == std::string::npos)
          known.detail += " (the CUDA toolkit at " + root + ")";
        m_runtime_index.emplace(resolve(fs(), r.path), it->second);
        m_toolkit_rows.insert(it->second);
        return;
      }
    }
    const std::size_t i = add_runtime(std::move(r));
    for (const std::string& lib : libs) m_runtime_index.emplace(resolve(fs(), lib), i);
    m_toolkit_rows.insert(i);
  }

  void toolkit_at(const std::string& root, const std::string& why) {
    const std::string json = join_path(root, "version.json");
    const std::string txt = join_path(root, "version.txt");
    Probed<std::string> text = read(json);
    if (text.ok()) {
      const Probed<std::string> v = parse_cuda_version_json(*text.value());
      if (v.ok())
        add_toolkit(root, CudaRuntime{*v.value(), "toolkit", json, why + ", version.json " + v.source(), ""});
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
        add_toolkit(root, CudaRuntime{*v.value(), "toolkit", txt, why + ", version.txt", ""});
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
      add_toolkit(root, CudaRuntime{d->version, "toolkit", join_path(dist_dir, name),
                                    why + ", " + d->project + " dist-info", ""});
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

  // LD_LIBRARY_PATH and the ld.so.conf directories, read once: the framework's libraries are
  // resolved against them, and the loader-path scan lists what they hold.
  void loader_dirs() {
    if (auto v = m_ctx.env.get("LD_LIBRARY_PATH")) {
      for (const std::string& dir : split_library_path(*v)) {
        if (dir.front() == '/') m_ld_library_path.push_back(dir);
      }
    }
    ld_so_conf("/etc/ld.so.conf", 0, m_conf_dirs);
  }

  void scan_library_dir(const std::string& dir, const std::string& source) {
    searched(dir);
    if (!m_scanned_dirs.insert(resolve(fs(), dir)).second) return;
    const auto names = list(dir);
    if (!names.ok()) {
      if (names.error()->code == ProbeErrc::NotFound) absent(dir);
      return;
    }
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
      const std::size_t before = m_out.runtimes.size();
      const std::size_t i = add_runtime(CudaRuntime{version, "loader", path, source, ""});
      if (i < before && m_out.runtimes[i].kind == "toolkit" &&
          m_out.runtimes[i].detail.find("on the loader path") == std::string::npos) {
        m_out.runtimes[i].detail += "; its " + soname + " is on the loader path (" + source + ")";
      }
    }
    const auto& all = *names.value();
    if (std::find(all.begin(), all.end(), "libnccl.so.2") != all.end())
      add_nccl(join_path(dir, "libnccl.so.2"), source);
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
    for (const std::string& dir : m_ld_library_path) scan_library_dir(dir, "LD_LIBRARY_PATH");
    for (const std::string& dir : m_conf_dirs) scan_library_dir(dir, "ld.so.conf");
    for (const char* dir : kDefaultDirs) scan_library_dir(dir, "default");
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

  // The job's interpreter asked in a contained child: its sys.path (import order), then any
  // site.getsitepackages() entry not on it, and the torch that `import torch` would load. Never
  // imports a framework. `source` says how it was chosen ("--python", "python3 on the job's PATH").
  // Returns false, leaving nothing recorded, when python3 found on the PATH did not answer within
  // its deadline: the caller then searches where Python would look (--python stays UNKNOWN).
  bool ask_interpreter(const std::string& exe, const std::string& source, std::vector<std::string>& dirs) {
    PythonInterpreter py;
    py.exe = exe;
    py.source = source;
    char buf[PATH_MAX];
    py.real = ::realpath(exe.c_str(), buf) != nullptr ? std::string(buf) : exe;
    ContainedRequest request;
    request.executable = exe;
    request.args = {"-B", "-S", "-c", kAskPython};
    const HelperDeadline deadline = m_ctx.helper_deadline(Helper::Python);
    request.deadline = deadline.limit;
    request.max_output = 1u << 20;
    const ContainedResult result = run_contained(request);
    const ContainedJson parsed = parse_contained_json(result);
    const std::string who = source == "--python" ? "--python " + exe : source + " (" + exe + ")";
    const std::string what = who + " (" + exe + " -c: sys.path as JSON)";
    if (!parsed.ok() && result.outcome == ContainedOutcome::TimedOut && source != "--python") {
      m_out.python_not_run = who + " did not answer: " + deadline.expired(result.elapsed_s);
      return false;
    }
    if (!parsed.ok()) {
      py.error = what + ": " +
                 (result.outcome == ContainedOutcome::TimedOut ? deadline.expired(result.elapsed_s) : parsed.error);
      problem(who, parsed.error);
      m_out.python = std::move(py);
      return true;
    }
    try {
      const nlohmann::json& doc = parsed.value;
      py.version = doc.value("version", std::string());
      py.prefix = doc.value("prefix", std::string());
      py.torch = doc.value("torch", std::string());
      std::vector<std::string> entries;
      for (const auto& e : doc.at("path")) entries.push_back(e.get<std::string>());
      for (const auto& e : doc.value("site", nlohmann::json::array())) entries.push_back(e.get<std::string>());
      for (const std::string& e : entries) {
        if (e.empty() || e.front() != '/' || e.ends_with(".zip")) continue;  // "" is the script's directory
        if (std::find(py.paths.begin(), py.paths.end(), e) != py.paths.end()) continue;
        py.paths.push_back(e);
      }
    } catch (const nlohmann::json::exception& e) {
      py.error = what + ": its answer is not the expected document: " + e.what();
      problem(who, py.error);
      m_out.python = std::move(py);
      return true;
    }
    // Where find_spec located torch comes first: that is the one `import torch` loads.
    if (py.torch.ends_with("/torch/__init__.py")) {
      const std::string site = parent_dir(parent_dir(py.torch));
      dirs.push_back(site);
    }
    dirs.insert(dirs.end(), py.paths.begin(), py.paths.end());
    m_out.python = std::move(py);
    m_first_torch_only = true;
    return true;
  }

  // python3 on the job's PATH (absolute entries only, in order): the interpreter a job started as
  // `python3 train.py` or `torchrun` (a python3 script) runs.
  std::optional<std::string> job_interpreter() const {
    const auto path = m_ctx.env.get("PATH");
    if (!path) return std::nullopt;
    for (const std::string_view dir : split(*path, ':')) {
      if (dir.empty() || dir.front() != '/') continue;
      const std::string exe = join_path(std::string(dir), "python3");
      struct stat st {};
      if (::stat(exe.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(exe.c_str(), X_OK) == 0) return exe;
    }
    return std::nullopt;
  }

  // As root, an interpreter is run only when no other user could have changed what it executes:
  // the program and its directories, PYTHONHOME and the PYTHONPATH directories (a job's user, or
  // anyone who wrote those variables, would otherwise run code as root). "" when it may run.
  std::string foreign_interpreter(const std::string& exe) const {
    if (::geteuid() != 0) return {};
    std::vector<std::string> paths = {exe};
    for (const char* var : {"PYTHONHOME", "PYTHONPATH"}) {
      const auto v = m_ctx.env.get(var);
      if (!v) continue;
      for (const std::string_view d : split(*v, ':')) {
        if (d.empty()) continue;
        if (d.front() != '/') return std::string(var) + " holds a relative directory (\"" + printable(d, 80) + "\")";
        paths.emplace_back(d);
      }
    }
    for (const std::string& p : paths) {
      if (std::string why = foreign_writable(p); !why.empty()) return why;
    }
    return {};
  }

  // Under --sysroot the interpreter cannot run: its prefix's lib/python3.*/{site,dist}-packages.
  void guess_interpreter_dirs(const std::string& exe, std::vector<std::string>& dirs) {
    const std::string bin = parent_dir(exe);
    if (base_name(bin) != "bin") {
      problem("--python " + exe, "not in a <prefix>/bin directory; use --site-packages");
      return;
    }
    const std::string prefix = parent_dir(bin);
    std::vector<std::string> found;
    for (const char* leaf : {"site-packages", "dist-packages"}) {
      if (auto xy = python_version_from_name(base_name(exe))) {
        found.push_back(prefix + "/lib/python" + *xy + "/" + leaf);
      } else {
        for (const std::string& d : python_lib_dirs(prefix, leaf)) found.push_back(d);
      }
    }
    if (prefix == "/usr" || prefix == "/usr/local") found.emplace_back("/usr/lib/python3/dist-packages");
    found.erase(std::remove_if(found.begin(), found.end(), [&](const std::string& d) { return !exists(d); }),
                found.end());
    if (found.empty()) problem("--python " + exe, "no " + prefix + "/lib/python3.*/{site,dist}-packages");
    dirs.insert(dirs.end(), found.begin(), found.end());
  }

  std::vector<std::string> environments() {
    std::vector<std::string> dirs;
    for (const std::string& d : m_ctx.options.site_packages) {
      if (!exists(d)) problem("--site-packages " + d, "does not exist");
      dirs.push_back(d);
    }
    if (!m_ctx.options.python.empty()) {
      if (fs().is_live())
        ask_interpreter(m_ctx.options.python, "--python", dirs);
      else
        guess_interpreter_dirs(m_ctx.options.python, dirs);
    }
    if (!dirs.empty() || m_out.python) return dirs;
    if (fs().is_live()) {
      if (const auto exe = job_interpreter()) {
        if (std::string why = foreign_interpreter(*exe); !why.empty()) {
          m_out.python_not_run = "python3 on the job's PATH (" + *exe + ") was not run as root: " + why;
        } else if (ask_interpreter(*exe, "python3 on the job's PATH", dirs)) {
          return dirs;
        }
      }
    }
    m_first_torch_only = true;  // the places in Python's order: the first torch is the one imported
    return python_search_order();
  }

  // Without an interpreter to ask (an image without Python, a capture, or one preflight may not
  // run): where Python would look, in its order. PYTHONPATH; a venv's site-packages (the rest only
  // when its pyvenv.cfg includes the system's); the user site (PYTHONUSERBASE, else ~/.local)
  // unless PYTHONNOUSERSITE; then the interpreter's own: PYTHONHOME's, the conda environment's,
  // /usr/local's and Debian's.
  std::vector<std::string> python_search_order() const {
    std::vector<std::string> dirs;
    if (auto v = m_ctx.env.get("PYTHONPATH")) {
      for (const std::string_view d : split(*v, ':')) {
        if (!d.empty() && d.front() == '/') dirs.emplace_back(d);
      }
    }
    if (auto venv = m_ctx.env.get("VIRTUAL_ENV"); venv && !venv->empty() && venv->front() == '/') {
      for (const std::string& d : python_lib_dirs(*venv, "site-packages")) dirs.push_back(d);
      if (!venv_includes_system(*venv)) return dirs;
    }
    if (!nonempty_env("PYTHONNOUSERSITE")) {
      std::optional<std::string> base = m_ctx.env.get("PYTHONUSERBASE");
      if (!base || base->empty()) {
        if (auto home = m_ctx.env.get("HOME"); home && !home->empty()) base = *home + "/.local";
      }
      if (base && !base->empty() && base->front() == '/') {
        for (const std::string& d : python_lib_dirs(*base, "site-packages")) dirs.push_back(d);
      }
    }
    if (auto home = m_ctx.env.get("PYTHONHOME"); home && !home->empty() && home->front() == '/') {
      const std::string prefix(split(*home, ':').front());
      for (const std::string& d : python_lib_dirs(prefix, "site-packages")) dirs.push_back(d);
      if (prefix != "/usr" && prefix != "/usr/local") return dirs;
    }
    if (auto conda = m_ctx.env.get("CONDA_PREFIX"); conda && !conda->empty() && conda->front() == '/') {
      for (const std::string& d : python_lib_dirs(*conda, "site-packages")) dirs.push_back(d);
    }
    for (const std::string& d : python_lib_dirs("/usr/local", "dist-packages")) dirs.push_back(d);
    dirs.emplace_back("/usr/lib/python3/dist-packages");
    for (const std::string& d : python_lib_dirs("/usr/local", "site-packages")) dirs.push_back(d);
    return dirs;
  }

  bool nonempty_env(const char* name) const {
    const auto v = m_ctx.env.get(name);
    return v && !v->empty();
  }

  // A venv's pyvenv.cfg `include-system-site-packages = true` (site.venv reads it the same way).
  bool venv_includes_system(const std::string& venv) const {
    const Probed<std::string> cfg = read(join_path(venv, "pyvenv.cfg"), 64u << 10);
    if (!cfg.ok()) return true;  // not a venv that isolates (virtualenv before 20, conda)
    for (const std::string_view line : split(*cfg.value(), '\n')) {
      const std::size_t eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      if (to_lower(trim(line.substr(0, eq))) == "include-system-site-packages")
        return to_lower(trim(line.substr(eq + 1))) == "true";
    }
    return false;
  }

  // The torches in the places a job's Python could look that its interpreter does not: listed as
  // not loaded by the job, so a CUDA torch in ~/.local is seen beside the CPU one it imports.
  void torches_not_on_path(const std::vector<std::string>& on_path) {
    std::vector<std::string> places;
    if (auto home = m_ctx.env.get("HOME"); home && !home->empty() && home->front() == '/')
      places = python_lib_dirs(*home + "/.local", "site-packages");
    for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
      if (auto prefix = m_ctx.env.get(var); prefix && !prefix->empty() && prefix->front() == '/') {
        for (const std::string& d : python_lib_dirs(*prefix, "site-packages")) places.push_back(d);
      }
    }
    for (const std::string& d : python_lib_dirs("/usr/local", "dist-packages")) places.push_back(d);
    places.emplace_back("/usr/lib/python3/dist-packages");
    for (const std::string& site : places) {
      if (std::find(on_path.begin(), on_path.end(), site) != on_path.end()) continue;
      const Probed<std::string> text = read(site + "/torch/version.py", 1u << 20);
      if (!text.ok()) continue;
      const Probed<TorchVersionPy> t = parse_torch_version_py(*text.value());
      if (!t.ok()) continue;
      m_out.not_loaded.push_back("torch " + t.value()->version + build_words(*t.value()) + " at " + site +
                                 ": not on the sys.path of " + m_out.python->exe);
    }
  }

  static std::string build_words(const TorchVersionPy& t) {
    if (!t.cuda.empty()) return " (CUDA " + t.cuda + ")";
    if (!t.hip.empty()) return " (ROCm " + t.hip + ")";
    return " (CPU-only)";
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

  // The architectures torch's CUDA library carries code for, from its fat binaries (headers only,
  // at most a million entries): SASS as "sm_90", PTX as "compute_90", as torch.cuda.get_arch_list().
  void read_arch_list(const ElfReader& read, FrameworkBuild& fw) {
    const Probed<FatbinArchs> archs = elf_fatbin_archs(read);
    if (const FatbinArchs* a = archs.value()) {
      fw.arch_list = a->arch_list();
      fw.arch_source = base_name(fw.library) + " " + a->section + ": " + std::to_string(a->entries) + " entries in " +
                       std::to_string(a->containers) + " containers";
    } else {
      fw.arch_source = "not read: " + base_name(fw.library) + ": " + archs.error()->detail;
    }
  }

  // The bytes of a file in the tree, for the ELF readers (a gigabyte-sized library is read a few
  // kilobytes at a time).
  ElfReader reader_of(const std::string& path) const {
    const std::string real = resolve(fs(), path);
    return [this, real](std::uint64_t offset, std::size_t size) -> std::optional<std::string> {
      Probed<std::string> bytes = fs().read_at(real, offset, size);
      if (!bytes.ok()) return std::nullopt;
      return std::move(*bytes.value());
    };
  }

  // The nccl* symbols torch's library needs against those the libnccl it loads exports.
  void compare_nccl_symbols(FrameworkBuild& fw) const {
    if (fw.library.empty()) return;
    const Probed<std::vector<std::string>> needed =
        elf_dynamic_symbols(reader_of(fw.library), SymbolSide::Needed, "nccl");
    const Probed<std::vector<std::string>> exported =
        elf_dynamic_symbols(reader_of(fw.nccl_path), SymbolSide::Exported, "nccl");
    if (!needed.ok() || !exported.ok()) {
      fw.nccl_symbols = "not read: " + (needed.ok() ? fw.nccl_path + ": " + exported.error()->detail
                                                    : fw.library + ": " + needed.error()->detail);
      return;
    }
    const std::vector<std::string>& have = *exported.value();
    for (const std::string& name : *needed.value()) {
      if (!std::binary_search(have.begin(), have.end(), name)) fw.nccl_missing.push_back(name);
    }
    fw.nccl_symbols = std::to_string(needed.value()->size()) + " nccl* symbols needed, " +
                      (fw.nccl_missing.empty() ? std::string("all exported")
                                               : std::to_string(fw.nccl_missing.size()) + " not exported");
  }

  // The dynamic section of torch's CUDA library: the first of them that reads as ELF.
  std::optional<ElfDynamic> torch_library(const std::string& lib_dir, FrameworkBuild& fw) {
    for (const char* name : {"libtorch_cuda.so", "libtorch_global_deps.so", "libc10_cuda.so"}) {
      const std::string path = join_path(lib_dir, name);
      if (!exists(path)) continue;
      const ElfReader read = reader_of(path);
      const Probed<ElfDynamic> elf = parse_elf_dynamic(read);
      if (!elf.ok()) {
        problem(path, elf.error()->detail);
        continue;
      }
      fw.library = path;
      read_arch_list(read, fw);
      return *elf.value();
    }
    return std::nullopt;
  }

  struct Found {
    std::string path;
    std::string via;
  };

  // The first directory of `order` holding `soname`, as ld.so would open it.
  std::optional<Found> find_library(const std::string& soname, const std::vector<LoaderDir>& order,
                                    std::vector<std::string>* looked = nullptr) const {
    for (const LoaderDir& d : order) {
      if (looked != nullptr) looked->push_back(d.dir);
      const std::string path = join_path(d.dir, soname);
      if (exists(path)) return Found{path, d.via};
    }
    return std::nullopt;
  }

  // Resolves the libcudart and libnccl a CUDA build of torch loads, and adds them as the job's.
  void resolve_torch(const std::string& site, const std::vector<Dist>& dists, FrameworkBuild& fw,
                     const std::string& requires_text) {
    const std::string lib_dir = site + "/torch/lib";
    const std::string major = std::to_string(Version::parse(fw.cuda)->major());
    const std::string who = "torch " + fw.version;
    std::optional<ElfDynamic> elf = torch_library(lib_dir, fw);
    std::string object = fw.library.empty() ? std::string() : base_name(fw.library);
    std::string nccl_soname = "libnccl.so.2";
    bool convention = false;  // no library read: the layouts' search path stands in for DT_RPATH
    if (elf) {
      for (const std::string& n : elf->needed) {
        if (n.starts_with("libcudart") && fw.cudart_soname.empty()) fw.cudart_soname = n;
        if (n.starts_with("libnccl")) nccl_soname = n;
      }
      if (std::none_of(elf->needed.begin(), elf->needed.end(),
                       [](const std::string& n) { return n.starts_with("libnccl"); }))
        nccl_soname.clear();
    } else {
      // No library readable (a partial install, a capture without torch/lib): the layouts of the
      // pip wheels (DT_RPATH $ORIGIN/../../nvidia/<package>/lib and $ORIGIN) and of conda
      // ($ORIGIN/../../../..: the environment's lib directory).
      elf = ElfDynamic{};
      elf->rpath = {"$ORIGIN/../../nvidia/cuda_runtime/lib", "$ORIGIN/../../nvidia/cu" + major + "/lib",
                    "$ORIGIN/../../nvidia/nccl/lib", "$ORIGIN", "$ORIGIN/../../../.."};
      object = "torch/lib";
      convention = true;
      fw.cudart_soname = cudart_soname_for(*Version::parse(fw.cuda));
      if (const auto names = list(lib_dir); names.ok()) {  // a copy bundled under a hashed name
        for (const std::string& n : *names.value()) {
          if (n.starts_with("libcudart-") && cudart_name_version(n)) fw.cudart_soname = n;
        }
      }
    }
    const std::vector<std::string> defaults(std::begin(kDefaultDirs), std::end(kDefaultDirs));
    std::vector<LoaderDir> order = loader_search_order(*elf, lib_dir, object, m_ld_library_path, m_conf_dirs, defaults);
    if (convention) {
      for (LoaderDir& d : order) {
        if (d.via.starts_with("DT_RPATH of "))
          d.via = "the wheel layout (no torch library readable): " + d.via.substr(d.via.find(": ") + 2);
      }
    }

    CudaRuntime r{fw.cuda, "torch", fw.path, "", who};
    std::string loads;
    if (fw.cudart_soname.empty()) {
      fw.cudart_via = "linked in (" + object + " needs no libcudart)";
      r.path = fw.library;
      loads = "its CUDA " + fw.cuda + " runtime linked in";
    } else if (const auto found = find_library(fw.cudart_soname, order, &fw.searched)) {
      fw.cudart_path = found->path;
      fw.cudart_via = found->via;
      r.path = found->path;
      std::string from = found->path;
      const Dist* wheel =
          found->path.starts_with(site + "/nvidia/") ? find_dist(dists, "nvidia-cuda-runtime", major) : nullptr;
      if (wheel != nullptr) {
        r.version = wheel->name.version;
        from = wheel->name.project + " " + wheel->name.version + " at " + found->path;
      } else if (const std::string v = library_version(found->path, "libcudart.so");
                 Version::parse(v) && Version::parse(v)->size() >= 2) {
        r.version = v;
      }
      loads = fw.cudart_soname + " from " + from + " (" + found->via + ")";
    } else {
      loads = fw.cudart_soname + ", which the loader finds nowhere (" + join(fw.searched, ", ") + ")";
    }
    r.detail = who + " (built for CUDA " + fw.cuda + ") loads " + loads + requires_text;
    add_runtime(std::move(r));

    if (nccl_soname.empty()) {
      fw.nccl_via = "linked in (" + object + " needs no libnccl)";
    } else if (const auto found = find_library(nccl_soname, order)) {
      fw.nccl_path = found->path;
      compare_nccl_symbols(fw);
      fw.nccl_via = found->via;
      const Dist* wheel = found->path.starts_with(site + "/nvidia/") ? find_dist(dists, "nvidia-nccl", "") : nullptr;
      add_nccl(found->path, wheel != nullptr ? "wheel " + wheel->name.project + " " + wheel->name.version : found->via,
               who);
    } else {
      fw.nccl_via = "not found: the loader finds " + nccl_soname + " nowhere";
    }
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
    if (m_first_torch_only && m_torch_found) {  // `import torch` gets the first one on sys.path
      m_out.not_loaded.push_back("torch " + parsed.value()->version + build_words(*parsed.value()) + " at " + site +
                                 ": shadowed by " + m_out.frameworks.front().path + ", which comes first on " +
                                 (m_out.python ? "the sys.path of " + m_out.python->exe : "Python's search path"));
      return;
    }
    m_torch_found = true;
    const TorchVersionPy& t = *parsed.value();
    FrameworkBuild fw;
    fw.name = "torch";
    fw.version = t.version;
    fw.cuda = t.cuda;
    fw.path = file;
    fw.build = !t.cuda.empty() ? "cuda" : !t.hip.empty() ? "rocm" : "cpu";
    if (fw.build != "cuda") {  // a CPU (or ROCm) build loads no CUDA runtime and no NCCL
      fw.nccl_via = "none";
      m_out.frameworks.push_back(std::move(fw));
      return;
    }
    std::string requires_text;
    for (const Dist& d : dists) {
      if (d.name.project != "torch") continue;
      const Probed<std::string> meta = read(d.dir + "/METADATA");
      if (meta.ok()) {
        const std::vector<std::string> pins = requires_dist_pins(*meta.value(), "nvidia-");
        if (!pins.empty()) requires_text = "; requires " + join(pins, ", ");
      }
      break;
    }
    resolve_torch(site, dists, fw, requires_text);
    m_out.frameworks.push_back(std::move(fw));
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
      if (m_runtime_index.count(resolve(fs(), path)) != 0) continue;  // the framework's own
      if (const Dist* d = find_dist(dists, "nvidia-cuda-runtime", major)) {
        add_runtime(CudaRuntime{d->name.version, "wheel", path, d->name.project + " " + d->name.version, ""});
      } else {
        problem(path, "no nvidia-cuda-runtime " + major + ".x *.dist-info beside it; version from the file name");
        add_runtime(CudaRuntime{*file_version, "wheel", path, "file name only", ""});
      }
    }
  }

  void site_packages(const std::string& site) {
    searched(site);
    const std::string real = resolve(fs(), site);
    if (!m_scanned_sites.insert(real).second) return;
    const auto names = list(site);
    if (!names.ok()) {
      if (names.error()->code == ProbeErrc::NotFound)
        absent(site);
      else
        problem(site, names.error()->detail);
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
    const std::vector<std::string> dirs = environments();
    for (const std::string& site : dirs) site_packages(site);
    if (m_out.python && m_out.python->error.empty()) torches_not_on_path(dirs);
  }

  // ---- container variables ----

  void container() {
    const auto v = m_ctx.env.get("CUDA_VERSION");
    if (!v) return;
    if (!Version::parse(*v)) {
      problem("CUDA_VERSION", "not a version: \"" + printable(*v, 40) + "\"");
      return;
    }
    // The image's toolkit, already listed from its version.json: one runtime, not two.
    const Version mm = Version::parse(*v)->truncated(2);
    for (const std::size_t i : m_toolkit_rows) {
      CudaRuntime& r = m_out.runtimes[i];
      const auto rv = Version::parse(trim(r.version));
      if (rv && rv->truncated(2) == mm) {
        r.detail += "; CUDA_VERSION " + *v;
        return;
      }
    }
    std::string detail = "CUDA_VERSION";
    if (auto cudart = m_ctx.env.get("NV_CUDA_CUDART_VERSION")) detail += ", NV_CUDA_CUDART_VERSION " + *cudart;
    add_runtime(CudaRuntime{*v, "container", "CUDA_VERSION", detail, ""});
  }

  // ---- what the job loads ----

  // The framework's runtimes and --cuda-runtime decide; only when neither exists does the loader
  // path (and the toolkit the job's binaries are built with) stand for what the job loads. A
  // framework without CUDA (a CPU build) loads none of them.
  void assign_loaded_by() {
    // An interpreter that could not be asked leaves the job's framework unknown: nothing found on
    // the node stands in for it (cuda.runtime is UNKNOWN, naming the interpreter).
    const bool framework = !m_out.frameworks.empty() || (m_out.python && !m_out.python->error.empty());
    const bool explicit_runtime = std::any_of(m_out.runtimes.begin(), m_out.runtimes.end(),
                                              [](const CudaRuntime& r) { return r.kind == "explicit"; });
    if (!framework && !explicit_runtime) {
      for (CudaRuntime& r : m_out.runtimes) {
        if (r.loaded_by.empty()) r.loaded_by = "no framework found: whatever the job's own binaries load";
      }
    }
    if (!framework) {
      for (LibraryCandidate& c : m_out.nccl_candidates) {
        if (c.loaded_by.empty()) c.loaded_by = "no framework found: the loader path";
      }
    }
  }

  const ProbeContext& m_ctx;
  RuntimeFacts& m_out;
  std::map<std::string, std::size_t> m_runtime_index;  // real path -> row of m_out.runtimes
  std::set<std::string> m_scanned_dirs, m_scanned_sites;
  std::set<std::size_t> m_toolkit_rows;  // rows that stand for a CUDA toolkit (its own, or a framework's it serves)
  std::vector<std::string> m_ld_library_path, m_conf_dirs;
  bool m_first_torch_only = false;  // the directories are in one interpreter's import order
  bool m_torch_found = false;
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

// A capture keeps what discovery found on the node (no copies of the libraries); a plain tree is
// searched file by file.
void probe_cuda_runtime_tree(const ProbeContext& ctx, RankFacts& facts) {
  if (ctx.captured().get("cuda_runtime") == nullptr) {
    probe_cuda_runtime(ctx, facts);
    return;
  }
  Probed<RuntimeFacts> held = captured_fact<RuntimeFacts>(ctx, "cuda_runtime", "", "CUDA runtime discovery");
  if (RuntimeFacts* r = held.value()) {
    facts.gpu.runtime = std::move(*r);
  } else {
    facts.gpu.runtime = RuntimeFacts{};
    facts.gpu.runtime.problems.push_back(held.why());
  }
}

}  // namespace preflight
