// SPDX-License-Identifier: MIT
// The configuration files NCCL will apply, in its order (src/misc/param.cc, initEnvFunc):
// $NCCL_CONF_FILE if set and non-empty, else <home>/.nccl.conf, then /etc/nccl.conf. Every path is
// read through the sysroot seam. A file that does not exist is recorded as NotFound, which is normal.
#include <unistd.h>

#include "core/env_grammar.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

ConfFile read_conf_file(const FileSystem& fs, std::string path, std::string role) {
  ConfFile file{std::move(path), std::move(role), {}};
  const Probed<std::string> text = fs.read(file.path);
  file.contents = text.ok() ? Probed<ConfFileContents>::ok(parse_nccl_conf(*text.value()), file.path)
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
std::optional<std::string> user_home(const ProbeContext& ctx, std::string& home_from) {
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
  if (const std::optional<std::string> conf = ctx.env.get("NCCL_CONF_FILE"); conf && !conf->empty()) {
    out.files.push_back(read_conf_file(ctx.fs, absolute(*conf), "NCCL_CONF_FILE"));
  } else if (const std::optional<std::string> home = user_home(ctx, out.home_from)) {
    out.files.push_back(read_conf_file(ctx.fs, *home + "/.nccl.conf", "user"));
  }
  out.files.push_back(read_conf_file(ctx.fs, "/etc/nccl.conf", "system"));
  facts.nccl_conf = std::move(out);
}

}  // namespace preflight
