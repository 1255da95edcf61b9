// SPDX-License-Identifier: MIT
// nccl_names: the NCCL_* names the job's NCCL reads, from the files themselves: the .rodata
// strings of the libnccl.so.2 the nccl probe loaded (a bounded read, no dlopen), and of the
// net/tuner/profiler plugins NCCL will load, resolved as src/plugin/plugin_open.cc names them:
// the value as given, then (for a bare name that is not lib*.so) libnccl-<kind>-<name>.so; unset,
// libnccl-<kind>.so; "none" loads nothing. dlopen from libnccl searches its DT_RPATH/DT_RUNPATH,
// LD_LIBRARY_PATH, the ld.so.conf directories and the default directories. Also records whether
// the files NCCL_TOPO_FILE and NCCL_GRAPH_FILE name exist. Runs after nccl and nccl_conf.
#include <strings.h>
#include <unistd.h>

#include <algorithm>

#include "core/cuda_discovery.hpp"
#include "core/elf_strings.hpp"
#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

constexpr std::size_t kLibraryScanMax = 64u << 20;  // .rodata of NCCL 2.28 is 0.2 MiB
constexpr std::size_t kPluginScanMax = 16u << 20;
constexpr const char* kDefaultDirs[] = {"/lib/x86_64-linux-gnu",
                                        "/usr/lib/x86_64-linux-gnu",
                                        "/lib/aarch64-linux-gnu",
                                        "/usr/lib/aarch64-linux-gnu",
                                        "/lib64",
                                        "/usr/lib64",
                                        "/lib",
                                        "/usr/lib"};

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
}

std::string absolute_from_cwd(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  std::string cwd(4096, '\0');
  if (::getcwd(cwd.data(), cwd.size()) == nullptr) return "/" + path;
  cwd.resize(cwd.find('\0'));
  return cwd + "/" + path;
}

ElfReader reader_for(const FileSystem& fs, const std::string& path) {
  return [&fs, path](std::uint64_t offset, std::size_t size) -> std::optional<std::string> {
    Probed<std::string> bytes = fs.read_at(path, offset, size);
    if (!bytes.ok()) return std::nullopt;
    return std::move(*bytes.value());
  };
}

// The value NCCL will see: the environment, else the first configuration file that sets it.
std::optional<std::string> effective(const ProbeContext& ctx, const RankFacts& facts, const std::string& name) {
  if (std::optional<std::string> v = ctx.env.get(name)) return v;
  if (const std::optional<ConfSetting> s = first_conf_setting(facts.nccl_conf, name)) return s->entry->value;
  return std::nullopt;
}

void ld_so_conf(const FileSystem& fs, const std::string& file, int depth, std::vector<std::string>& dirs) {
  if (depth > 8 || dirs.size() > 512) return;
  const Probed<std::string> text = fs.read(file, 1u << 20);
  if (!text.ok()) return;
  const LdSoConf conf = parse_ld_so_conf(*text.value());
  for (const std::string& d : conf.dirs) {
    if (!d.empty() && d.front() == '/') dirs.push_back(d);
  }
  for (const std::string& inc : conf.includes) {
    const std::string pattern = inc.front() == '/' ? inc : dir_of(file) + "/" + inc;
    const std::string dir = dir_of(pattern), glob = pattern.substr(pattern.rfind('/') + 1);
    if (glob.find_first_of("*?") == std::string::npos) {
      ld_so_conf(fs, pattern, depth + 1, dirs);
      continue;
    }
    const auto names = fs.list(dir);
    if (!names.ok()) continue;
    for (const std::string& name : *names.value()) {
      if (glob_match(glob, name)) ld_so_conf(fs, dir + "/" + name, depth + 1, dirs);
    }
  }
}

class PluginFinder {
 public:
  PluginFinder(const ProbeContext& ctx, const FileSystem& fs, const std::string& library) : m_fs(fs) {
    std::vector<std::string> ld_library_path, cache_dirs;
    if (auto v = ctx.env.get("LD_LIBRARY_PATH")) {
      for (const std::string& d : split_library_path(*v)) {
        if (d.front() == '/') ld_library_path.push_back(d);
      }
    }
    ld_so_conf(fs, "/etc/ld.so.conf", 0, cache_dirs);
    ElfDynamic elf;
    if (!library.empty()) {
      Probed<ElfDynamic> parsed = parse_elf_dynamic(reader_for(fs, library));
      if (ElfDynamic* e = parsed.value()) elf = std::move(*e);
    }
    std::vector<std::string> defaults(std::begin(kDefaultDirs), std::end(kDefaultDirs));
    m_order = loader_search_order(elf, library.empty() ? "/" : dir_of(library), "libnccl.so.2", ld_library_path,
                                  cache_dirs, defaults);
  }

  // Where dlopen(name) from libnccl finds the file: a name with '/' is a path; else the search.
  std::string find(const std::string& name) const {
    if (name.find('/') != std::string::npos) {
      const std::string path = absolute_from_cwd(name);
      return m_fs.exists(path) ? path : std::string();
    }
    for (const LoaderDir& d : m_order) {
      const std::string path = d.dir + "/" + name;
      if (m_fs.exists(path)) return path;
    }
    return {};
  }

 private:
  const FileSystem& m_fs;
  std::vector<LoaderDir> m_order;
};

NcclPlugin plugin(const PluginFinder& finder, const FileSystem& fs, const std::string& kind,
                  const std::string& variable, const std::string& requested) {
  NcclPlugin p{kind, requested, variable, {}, {}, {}};
  const std::string prefix = "libnccl-" + kind;
  if (requested.empty()) {
    p.tried.push_back(prefix + ".so");
  } else {
    p.tried.push_back(requested);
    const bool lib_so = requested.starts_with("lib") && requested.size() >= 3 && requested.ends_with(".so");
    if (requested.find('/') == std::string::npos && !lib_so) p.tried.push_back(prefix + "-" + requested + ".so");
  }
  for (const std::string& name : p.tried) {
    p.path = finder.find(name);
    if (!p.path.empty()) break;
  }
  if (!p.path.empty()) {
    Probed<std::vector<std::string>> names = elf_rodata_env_names(reader_for(fs, p.path), "NCCL_", kPluginScanMax);
    if (auto* n = names.value()) p.names = std::move(*n);
  }
  return p;
}

}  // namespace

void probe_nccl_names(const ProbeContext& ctx, RankFacts& facts) {
  NcclNames out;
  const FileSystem live;
  bool live_path = false;
  if (!facts.gpu.runtime.nccl_candidates.empty()) {
    out.library = facts.gpu.runtime.nccl_candidates.front().path;
    live_path = facts.gpu.runtime.nccl_candidates.front().source == "--nccl-lib";
  } else if (!ctx.options.nccl_lib.empty()) {
    out.library = ctx.options.nccl_lib;
    live_path = true;
  }
  const NcclLibrary* lib = facts.gpu.nccl.value();
  if (lib != nullptr) {
    out.version = lib->version;
    // What the helper really loaded, where that is a file of this machine's tree.
    if (ctx.fs.is_live() && !lib->path.empty()) out.library = lib->path;
  }
  const FileSystem& fs = live_path ? live : ctx.fs;
  if (out.library.empty()) {
    out.names = Probed<std::vector<std::string>>::error(
        ProbeErrc::NotFound, lib == nullptr ? "no libnccl.so.2 found where the job loads it: " + facts.gpu.nccl.why()
                                            : "the loaded libnccl.so.2 has no known path");
  } else {
    Probed<std::vector<std::string>> names =
        elf_rodata_env_names(reader_for(fs, out.library), "NCCL_", kLibraryScanMax);
    if (names.ok() && names.value()->empty()) {
      names = Probed<std::vector<std::string>>::error(
          ProbeErrc::ParseError, "no NCCL_* strings in " + out.library + " (" + names.source() + ")");
    } else if (!names.ok() && names.error()->code == ProbeErrc::ParseError) {
      // elf_rodata_env_names reads nothing on a short first read: name the file's own error.
      const Probed<std::string> head = fs.read_at(out.library, 0, 4);
      if (!head.ok()) names = Probed<std::vector<std::string>>::error(*head.error());
    }
    out.names = std::move(names);
  }

  const PluginFinder finder(ctx, fs, out.library);
  const std::pair<const char*, const char*> kinds[] = {
      {"net", "NCCL_NET_PLUGIN"}, {"tuner", "NCCL_TUNER_PLUGIN"}, {"profiler", "NCCL_PROFILER_PLUGIN"}};
  for (const auto& [kind, variable] : kinds) {
    const std::optional<std::string> value = effective(ctx, facts, variable);
    if (!value) {
      out.plugins.push_back(plugin(finder, fs, kind, "", ""));
      continue;
    }
    if (::strcasecmp(value->c_str(), "none") == 0) continue;
    // NCCL_NET_PLUGIN is a comma list (src/plugin/net.cc, strtok_r); the others name one library.
    std::vector<std::string> entries;
    if (std::string_view(kind) == "net") {
      for (std::string_view e : split(*value, ',')) {
        if (!e.empty() && entries.size() < 16) entries.emplace_back(e);
      }
    } else if (!value->empty()) {
      entries.push_back(*value);
    }
    if (entries.empty()) out.plugins.push_back(plugin(finder, fs, kind, "", ""));
    for (const std::string& e : entries) out.plugins.push_back(plugin(finder, fs, kind, variable, e));
  }
  facts.nccl_conf.names = std::move(out);

  for (const char* variable : {"NCCL_TOPO_FILE", "NCCL_GRAPH_FILE"}) {
    const std::optional<std::string> value = effective(ctx, facts, variable);
    if (!value || value->empty()) continue;
    NcclNamedFile f{variable, absolute_from_cwd(*value), "ok"};
    const Probed<std::string> head = ctx.fs.read_at(f.path, 0, 1);
    if (!head.ok()) f.state = to_string(head.error()->code);
    facts.nccl_conf.named_files.push_back(std::move(f));
  }
}

}  // namespace preflight
