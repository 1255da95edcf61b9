// SPDX-License-Identifier: MIT
#include "launcher/app.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <cstdio>
#include <iostream>

#include "checks/check.hpp"
#include "core/text.hpp"
#include "launcher/capture.hpp"
#include "launcher/cli.hpp"
#include "launcher/job_run.hpp"
#include "launcher/merge.hpp"
#include "launcher/output.hpp"
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

void validate_paths(const Options& options) {
  if (!options.sysroot.empty()) {
    struct stat st {};
    if (::stat(options.sysroot.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw UsageError("--sysroot '" + printable(options.sysroot, 200) + "': not a directory");
    }
  }
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
      case Command::Capture:
        return capture_command(cli.options, cli.args.empty() ? std::string() : cli.args.front(), cli.tar_file, start);
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
