// SPDX-License-Identifier: MIT
// `preflight merge FILE...`: one report from JSON results written separately — one file per node
// (`preflight --json FILE` of single-node runs, e.g. a Slurm array) or one per rank
// (`--json-per-rank DIR`). The files' facts become a JobFacts with source "merge", their rank- and
// node-scope results are grouped, and the job-scope checks run over the merged facts. And the
// writer of the per-rank files.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "core/options.hpp"
#include "report/report.hpp"
#include "sys/bounded_read.hpp"

namespace preflight {

class CompatMatrix;

/// A result file larger than this is refused before it is read (a report with the facts of a few
/// hundred ranks is a few MiB).
inline constexpr std::uintmax_t kMaxResultFileBytes = 64u << 20;
/// Rank numbers and world sizes a file may claim.
inline constexpr int kMaxMergeWorld = 1 << 20;

/// One result file as read: what its ranks found and judged.
struct ResultFile {
  std::string path;
  Profile profile = Profile::Node;
  int world_size = 1;                // the file's own world.size
  std::vector<RankFacts> ranks;      // ranks[].facts, placement.rank set from ranks[].rank
  std::vector<CheckResult> results;  // the rank- and node-scope results (job-scope ones are judged again)
  std::vector<std::string> incidents;
  bool deadline_expired = false;  // the run that wrote it ended with exit code 4
};

/// Parses one file's text. Throws UsageError (cli/cli.hpp) "FILE: what is wrong" for text
/// that is not JSON, truncated, not a preflight/v1 report, from another major version of
/// preflight, or whose results name ranks the file has no facts for.
ResultFile parse_result_file(const std::string& path, std::string_view text);

/// The reader parse_result_file() tries first, over simdjson (when the build has it): the same
/// ResultFile for any file it accepts, and nullopt for whatever it leaves to the reference reader
/// (a file it would refuse, a value of an unexpected type, a number nlohmann::json reads otherwise).
std::optional<ResultFile> parse_result_file_fast(const std::string& path, std::string_view text);
/// Whether this build has the fast reader (built with libsimdjson-dev).
bool fast_result_reader();
/// parse_result_file() through nlohmann::json alone: the reference the fast reader must agree with.
ResultFile parse_result_file_reference(const std::string& path, std::string_view text);

/// One file to read: named on the command line, or listed in a directory named there.
struct ResultInput {
  std::string path;  // for messages: the file as given, or DIR/NAME
  OpenDir dir;       // the directory it was listed in, whose descriptor it is opened beneath; none for a file given
  std::string name;  // its name in `dir`
};

/// Reads (at most kMaxResultFileBytes, without blocking on a FIFO) and parses one file: a file
/// given is read as named, a directory's entry beneath the directory (a symlink that leads out of
/// it is refused). Throws UsageError.
ResultFile read_result_file(const ResultInput& input);
ResultFile read_result_file(const std::string& path);

/// The files combined, in the order given.
struct MergedJob {
  JobFacts job;                        // source "merge"
  std::vector<CheckResult> per_rank;   // every file's rank- and node-scope results, ranks renumbered
  Profile profile = Profile::Job;      // --profile, else image when every file is, else job
  std::vector<std::string> notes;      // the renumbering, when it happened
  std::vector<std::string> incidents;  // the files' own incidents, naming the file
  bool deadline_expired = false;
};

/// Files from separate runs (each a whole world of its own, all starting at rank 0) are renumbered
/// in file order; files of one job (per-rank files) keep their ranks, and the ranks none of them
/// holds are undelivered in the job's status. Throws UsageError when one rank of one host is in two
/// files, or a file claims an implausible world. Linear in the ranks (hash lookups only).
MergedJob merge_files(std::vector<ResultFile> files, const Options& options);

/// The result files `paths` name: a file as it is, a directory as every *.json file in it (not
/// hidden ones), by name, each to be opened beneath the directory's descriptor. Throws UsageError
/// for a directory that cannot be listed or holds none.
std::vector<ResultInput> result_files(const std::vector<std::string>& paths);
/// Each input's path, in order.
std::vector<std::string> input_paths(const std::vector<ResultInput>& inputs);

/// Reads `paths` (as result_files() lists them), in parallel, and merges them into the report,
/// job-scope checks included; `files_read`, when given, counts the files read as they are (for a
/// progress line on another thread). Throws UsageError for a bad file.
Report merge_report(const Options& options, const std::vector<std::string>& paths, const CompatMatrix* matrix,
                    std::atomic<int>* files_read = nullptr);

/// The `preflight merge` command: the merged report printed and written like a run's, and the exit
/// code of a run (README.md#exit-codes; a bad file: UsageError, exit 2). `reexec_argv`, the
/// command line as launched, lets a large merge re-execute itself with its heap tuned
/// (cli/merge_heap.hpp) once the result files are listed; nullptr merges in this process.
int merge_command(const Options& options, const std::vector<std::string>& paths, char** reexec_argv = nullptr);

/// Writes `report` (one rank's) as DIR/preflight-rank-<R>.json, R its first rank, atomically (a
/// temporary file in DIR, then rename); creates DIR when missing. Throws std::runtime_error.
void write_rank_json(const std::string& dir, const Report& report, const Options& options);

}  // namespace preflight
