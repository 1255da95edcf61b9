// SPDX-License-Identifier: MIT
// The result files `preflight merge` reads (cli/merge): parse_result_file, which refuses
// anything that is not a preflight/v1 report with a UsageError naming the file, then merge_files
// of the file alone and twice over, and the job-scope checks over the merged job. The fast reader
// (simdjson) must read whatever it accepts exactly as the reference reader (nlohmann::json) does.
// With PREFLIGHT_FUZZ_WRITE_SEED=FILE set, the target writes a healthy single-node run's JSON to
// FILE and exits (how corpus/merge_json/ was made).
#include <fstream>

#include "cli/cli.hpp"
#include "cli/merge.hpp"
#include "cli/result_file_json.hpp"
#include "fuzz_checks.hpp"
#include "fuzz_common.hpp"
#include "job/job_report.hpp"
#include "report/report.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* out = std::getenv("PREFLIGHT_FUZZ_WRITE_SEED")) {
    RankFacts f = job_fixture::job(1, 1, 2).ranks.front();
    f.placement.world_size = 1;
    std::vector<CheckResult> results;
    for (const char* id : {"shm.capacity", "host.limits"}) {
      CheckResult r;
      r.id = id;
      r.area = std::string(id).substr(0, std::string(id).find('.'));
      r.title = id;
      r.scope = r.area == "shm" ? Scope::Node : Scope::Rank;
      r.verdict = Verdict::pass("fine");
      r.hosts = {f.identity.hostname};
      r.ranks = {0};
      results.push_back(r);
    }
    Options none;
    none.only = {"none"};
    Report report = assemble_report(none, Profile::Job, single_rank_job(f), {}, nullptr);
    report.results = results;
    report.launcher = "openmpi";
    std::ofstream(out, std::ios::binary) << render_json(report, Options{});
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  if (const std::optional<ResultFile> fast = parse_result_file_fast("node-a.json", in)) {
    ResultFile reference;
    bool refused = false;
    try {
      reference = parse_result_file_reference("node-a.json", in);
    } catch (const UsageError&) {
      refused = true;
    }
    FUZZ_CHECK(!refused);  // the fast reader accepted what the reference refuses
    FUZZ_CHECK(testing::result_file_json(*fast) == testing::result_file_json(reference));
  }
  ResultFile file;
  try {
    file = parse_result_file("node-a.json", in);
  } catch (const UsageError& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with("node-a.json"));
    return 0;
  }
  const Options options;
  for (int copies : {1, 2}) {
    std::vector<ResultFile> files(static_cast<std::size_t>(copies), file);
    if (copies == 2) files[1].path = "node-b.json";
    try {
      const MergedJob merged = merge_files(std::move(files), options);
      fuzz::run_all_checks(merged.job, options, nullptr, size);
    } catch (const UsageError&) {
      // one rank of one host in two files, an implausible world: refused by name
    }
  }
  return 0;
}
