// SPDX-License-Identifier: MIT
#include "launcher/app.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "checks/check.hpp"
#include "core/text.hpp"
#include "launcher/cli.hpp"
#include "launcher/job_run.hpp"
#include "launcher/run.hpp"
#include "matrix/compat_matrix.hpp"

extern char** environ;

namespace preflight {
namespace {

constexpr int kExitUsage = 2;
constexpr int kExitInternal = 5;

int list_checks() {
  std::size_t width = 0;
  for (const CheckSpec* spec : all_checks()) width = std::max(width, spec->id.size());
  for (const CheckSpec* spec : all_checks()) {
    std::string id(spec->id);
    id.resize(width + 2, ' ');
    std::string scope = to_string(spec->scope);
    scope.resize(6, ' ');
    std::cout << id << scope << spec->title << "\n";
  }
  return 0;
}

int explain_check(const std::string& id) {
  const CheckSpec* spec = find_check(id);
  if (spec == nullptr) {
    std::string known;
    for (const CheckSpec* s : all_checks()) known += (known.empty() ? "" : ", ") + std::string(s->id);
    std::cerr << "preflight: error: no check '" << printable(id, 60) << "' (checks: " << known << ")\n";
    return kExitUsage;
  }
  std::cout << spec->id << " — " << spec->title << "\n"
            << "scope: " << to_string(spec->scope) << "\n\n"
            << spec->explain << "\n";
  return 0;
}

bool use_color(const Options& options, const EnvSnapshot& env) {
  if (options.color) return *options.color == 1;
  if (env.has("NO_COLOR")) return false;
  if (env.get("TERM").value_or("") == "dumb") return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

void write_file(const std::string& path, const std::string& contents) {
  // Write next to the target, then rename: a reader never sees half a report.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + path + "'");
    out << contents;
    if (!out.flush()) throw std::runtime_error("cannot write '" + path + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "'");
  }
}

void validate_paths(const Options& options) {
  if (!options.sysroot.empty()) {
    struct stat st {};
    if (::stat(options.sysroot.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw UsageError("--sysroot '" + printable(options.sysroot, 200) + "': not a directory");
    }
  }
}

/// --matrix DIR, loaded and validated once before anything is probed (a bad file: exit 2).
std::optional<CompatMatrix> load_matrix(const Options& options) {
  if (options.matrix_dir.empty()) return std::nullopt;
  try {
    return load_from_dir(options.matrix_dir);
  } catch (const MatrixError& e) {
    throw UsageError(std::string("--matrix: ") + e.what());
  }
}

/// Rank 0's output: the files asked for, then the chosen format on stdout.
void emit_report(const Report& report, const Options& options, const EnvSnapshot& env) {
  if (!options.json_file.empty()) write_file(options.json_file, render_json(report, options));
  if (!options.junit_file.empty()) write_file(options.junit_file, render_junit(report, options));
  if (!options.prom_file.empty()) write_file(options.prom_file, render_prometheus(report, options));
  switch (options.format) {
    case Format::Text: std::cout << render_text(report, options, use_color(options, env)); break;
    case Format::Json: std::cout << render_json(report, options); break;
    case Format::Junit: std::cout << render_junit(report, options); break;
    case Format::Prometheus: std::cout << render_prometheus(report, options); break;
  }
  std::cout.flush();
}

int run_command(const Options& options, std::chrono::steady_clock::time_point start) {
  validate_paths(options);
  const std::optional<CompatMatrix> matrix = load_matrix(options);
  const EnvSnapshot env = EnvSnapshot::capture(environ);
  return run_job(options, start, env, matrix ? &*matrix : nullptr,
                 [&](const Report& report) { emit_report(report, options, env); });
}

}  // namespace

int app_main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  try {
    const Cli cli = parse_cli(std::vector<std::string>(argv, argv + argc));
    switch (cli.command) {
      case Command::Help:
        std::cout << help_text();
        return 0;
      case Command::Version:
        std::cout << "preflight " << PREFLIGHT_VERSION << "\n";
        return 0;
      case Command::List:
        return list_checks();
      case Command::Explain:
        return explain_check(cli.args.front());
      case Command::Merge:
        return merge_command(cli.options, cli.args);
      case Command::Run:
        return run_command(cli.options, start);
    }
  } catch (const UsageError& e) {
    std::cerr << "preflight: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "preflight: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
  return kExitInternal;
}

}  // namespace preflight
