// SPDX-License-Identifier: MIT
#include "cli/app.hpp"
#include "core/exit_code.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.hpp"
#include "cli/capture.hpp"
#include "cli/cli.hpp"
#include "cli/merge.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "core/launch.hpp"
#include "core/text.hpp"
#include "job/job_run.hpp"
#include "job/run.hpp"
#include "matrix/compat_matrix.hpp"

extern char** environ;

namespace preflight {
namespace {

/// Text for stdout (help, list, explain): exit 5 when it cannot be written, `code` otherwise (a
/// reader that closed the pipe early, `preflight list | head -3`, is not an error).
int print(const std::string& text, int code = 0) {
  const bool utf8 = utf8_terminal(EnvSnapshot::capture(environ));
  const int err = write_all(STDOUT_FILENO, utf8 ? text : ascii_only(text));
  if (err != 0 && err != EPIPE) {
    std::cerr << "preflight: error: cannot write to standard output: " << std::strerror(err) << "\n";
    return to_int(ExitCode::Internal);
  }
  return code;
}

int list_checks() {
  std::size_t width = 0;
  for (const CheckSpec* spec : all_checks()) width = std::max(width, spec->id.size());
  std::string out;
  for (const CheckSpec* spec : all_checks()) {
    std::string id(spec->id);
    id.resize(width + 2, ' ');
    std::string scope = to_string(spec->scope);
    scope.resize(6, ' ');
    out += id + scope + std::string(spec->title) + "\n";
  }
  return print(out);
}

int explain_check(const std::string& id) {
  const CheckSpec* spec = find_check(id);
  if (spec == nullptr) {
    std::string known;
    for (const CheckSpec* s : all_checks()) known += (known.empty() ? "" : ", ") + std::string(s->id);
    std::cerr << "preflight: error: no check '" << printable(id, 60) << "' (checks: " << known << ")\n";
    return to_int(ExitCode::Usage);
  }
  // What the check table says of causes: the checks whose failure this one's verdict may follow
  // from (the report folds it under them), and the checks that may follow from this one.
  std::vector<std::string> follows_from;
  for (std::string_view cause : split(spec->causes, ',')) {
    if (!trim(cause).empty()) follows_from.emplace_back(trim(cause));
  }
  std::vector<std::string> explains;
  for (const CheckSpec* other : all_checks()) {
    if (may_follow_from(*other, spec->id)) explains.emplace_back(other->id);
  }
  std::string causes;
  if (!follows_from.empty()) {
    causes += "\nMay follow from: " + join(follows_from, ", ") +
              " (when one of them is not PASS on the same ranks and explains this verdict, the text report prints "
              "this check as one line under it; JSON: \"cause\").";
  }
  if (!explains.empty()) causes += "\nMay explain: " + join(explains, ", ") + ".";
  if (!spec->findings.empty()) {
    // The findings table: code, status and message template of each.
    causes += "\nFindings (JSON: findings[].code):";
    for (const FindingSpec& f : spec->findings) {
      std::string status = to_string(f.status);
      status.resize(8, ' ');
      causes += "\n  " + status + std::string(f.code) + "\n          " + std::string(f.message);
    }
  }
  // What `--only ID` gathers: the sources the check reads and what those read.
  causes += "\nReads: " + names_of(spec->reads, ", ") + " (with what those read, `--only " + std::string(spec->id) +
            "` runs: " + names_of(with_needs(spec->reads)) + ").";
  return print(std::string(spec->id) + " — " + std::string(spec->title) + "\nscope: " + to_string(spec->scope) +
               "\n\n" + std::string(spec->explain) + "\n" + causes + (causes.empty() ? "" : "\n"));
}

/// Whether this process writes the report: alone, or the rank a launcher numbers 0 (the others
/// never open the report files, so only rank 0's node needs the paths).
bool writes_the_report(const EnvSnapshot& env) {
  const LaunchView view = detect_launchers(env);
  const LauncherClaim* active = view.active();
  return active == nullptr || !active->rank || active->rank->value == 0;
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
  const EnvSnapshot env = EnvSnapshot::capture(environ);
  if (writes_the_report(env)) check_report_files(options);  // before anything is probed
  check_rank_dir(options);                                  // every rank writes its own file there
  const std::optional<CompatMatrix> matrix = load_matrix(options);
  JobHooks hooks;
  hooks.emit = [&](const Report& report, int code) { return emit_report(report, options, env, code); };
  hooks.write_rank_file = [&](const Report& own) -> std::string {
    try {
      write_rank_json(options.json_per_rank_dir, own, options);
    } catch (const UsageError& e) {  // a planted path, refused: the rank ends with exit 2
      return e.what();
    }
    return {};
  };
  hooks.progress = [&](int world, std::function<int()> arrived) -> std::unique_ptr<JobProgress> {
    return std::make_unique<ProgressLine>(progress_wanted(options, env), world, std::move(arrived), STDERR_FILENO,
                                          "ranks reported", utf8_terminal(env));
  };
  return run_job(options, start, env, matrix ? &*matrix : nullptr, hooks);
}

}  // namespace

int app_main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  try {
    const Cli cli = parse_cli(std::vector<std::string>(argv, argv + argc));
    switch (cli.command) {
      case Command::Help: return print(help_text());
      case Command::Version: return print(std::string("preflight ") + PREFLIGHT_VERSION + "\n");
      case Command::List: return list_checks();
      case Command::Explain: return explain_check(cli.args.front());
      case Command::Merge: return merge_command(cli.options, cli.args, argv);
      case Command::Run: return run_command(cli.options, start);
      case Command::Capture:
        return capture_command(cli.options, cli.args.empty() ? std::string() : cli.args.front(), cli.tar_file, start);
    }
  } catch (const UsageError& e) {
    std::cerr << "preflight: error: " << e.what() << "\n";
    return to_int(ExitCode::Usage);
  } catch (const std::exception& e) {
    std::cerr << "preflight: internal error: " << e.what() << "\n";
    return to_int(ExitCode::Internal);
  }
  return to_int(ExitCode::Internal);
}

}  // namespace preflight
