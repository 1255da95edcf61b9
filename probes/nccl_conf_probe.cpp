// SPDX-License-Identifier: MIT
// The configuration files NCCL will apply, in its order (src/misc/param.cc, initEnvFunc):
// $NCCL_CONF_FILE if set and non-empty, else <home>/.nccl.conf, then /etc/nccl.conf. The home is
// getpwuid()'s before NCCL 2.30 and $HOME from 2.30 on (the version the nccl probe read). Every path is
// read through the sysroot seam. A file that does not exist is recorded as NotFound, which is normal.
#include <unistd.h>

#include "core/env_grammar.hpp"
#include "core/version.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

ConfFile read_conf_file(const FileSystem& fs, std::string path, std::string role, bool strip_cr) {
  ConfFile file{std::move(path), std::move(role), {}};
  const Probed<std::string> text = fs.read(file.path);
  file.contents = text.ok() ? Probed<ConfFileContents>::ok(parse_nccl_conf(*text.value(), strip_cr), file.path)
                            : Probed<ConfFileContents>::error(*text.error(), file.path);
  return file;
}

// NCCL opens a relative NCCL_CONF_FILE relative to the job's working directory, which is ours.
std::string absolute(const std::string& path) {
  if (path.front() == '/') return path;
  std::string cwd(4096, '\0');
  if (::getcwd(cwd.data(), cwd.size()) == nullptr) return "/" + path;
  cwd.resize(cwd.find('\0'));
  return cwd + "/" + path;
}

// NCCL takes the home directory from getpwuid(getuid()), not from $HOME; HOME stands in only when
// /etc/passwd has no entry (the name service may still have one).
std::optional<std::string> user_home(const ProbeContext& ctx, std::string& home_from, bool home_env_only) {
  if (home_env_only) {
    std::optional<std::string> home = ctx.env.get("HOME");
    if (!home || home->empty()) return std::nullopt;
    home_from = "HOME";
    return home;
  }
  const Probed<std::string> passwd = ctx.fs.read("/etc/passwd");
  if (const std::string* text = passwd.value()) {
    if (std::optional<std::string> home = passwd_home(*text, ::getuid())) {
      home_from = "/etc/passwd";
      return home;
    }
  }
  std::optional<std::string> home = ctx.env.get("HOME");
  if (!home || home->empty()) return std::nullopt;
  home_from = "HOME";
  return home;
}

}  // namespace

void probe_nccl_conf(const ProbeContext& ctx, RankFacts& facts) {
  NcclConfFacts out;
  // NCCL 2.30 changed both: userHomeDir() is getenv("HOME"), and setEnvFile strips a '\r'.
  const NcclLibrary* lib = facts.gpu.nccl.value();
  const std::optional<Version> version = lib != nullptr ? Version::parse(lib->version) : std::nullopt;
  const bool nccl_2_30 = version && *version >= Version::of({2, 30});
  if (const std::optional<std::string> conf = ctx.env.get("NCCL_CONF_FILE"); conf && !conf->empty()) {
    out.files.push_back(read_conf_file(ctx.fs, absolute(*conf), "NCCL_CONF_FILE", nccl_2_30));
  } else if (const std::optional<std::string> home = user_home(ctx, out.home_from, nccl_2_30)) {
    out.files.push_back(read_conf_file(ctx.fs, *home + "/.nccl.conf", "user", nccl_2_30));
  }
  out.files.push_back(read_conf_file(ctx.fs, "/etc/nccl.conf", "system", nccl_2_30));
  facts.nccl_conf = std::move(out);
}

}  // namespace preflight
