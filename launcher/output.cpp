// SPDX-License-Identifier: MIT
#include "launcher/output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "launcher/cli.hpp"

namespace preflight {
namespace {

bool use_color(const Options& options, const EnvSnapshot& env) {
  if (options.color) return *options.color == 1;
  if (env.has("NO_COLOR")) return false;
  return is_terminal(STDOUT_FILENO, env);
}

}  // namespace

bool is_terminal(int fd, const EnvSnapshot& env) {
  return env.get("TERM").value_or("") != "dumb" && ::isatty(fd) == 1;
}

std::optional<CompatMatrix> load_matrix(const Options& options) {
  if (options.matrix_dir.empty()) return std::nullopt;
  try {
    return load_from_dir(options.matrix_dir);
  } catch (const MatrixError& e) {
    throw UsageError(std::string("--matrix: ") + e.what());
  }
}

void write_atomically(const std::string& path, const std::string& contents) {
  const std::filesystem::path target(path);
  const std::filesystem::path tmp =
      target.parent_path() / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
    out << contents;
    if (!out.flush()) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write '" + path + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + std::strerror(err));
  }
}

void emit_report(const Report& report, const Options& options, const EnvSnapshot& env) {
  if (!options.json_file.empty()) write_atomically(options.json_file, render_json(report, options));
  if (!options.junit_file.empty()) write_atomically(options.junit_file, render_junit(report, options));
  if (!options.prom_file.empty()) write_atomically(options.prom_file, render_prometheus(report, options));
  switch (options.format) {
    case Format::Text: std::cout << render_text(report, options, use_color(options, env)); break;
    case Format::Json: std::cout << render_json(report, options); break;
    case Format::Junit: std::cout << render_junit(report, options); break;
    case Format::Prometheus: std::cout << render_prometheus(report, options); break;
  }
  std::cout.flush();
}

}  // namespace preflight
