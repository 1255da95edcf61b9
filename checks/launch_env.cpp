// SPDX-License-Identifier: MIT
// launch.env (rank): do the launchers' variables in this process agree with each other and with
// what the framework will read (RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE)? Where the run
// initialised MPI, every claim is also compared with MPI's own rank, size, local rank and local size.
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "checks/check.hpp"
#include "core/launch.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

using Field = std::optional<Claimed> LauncherClaim::*;

constexpr Field kCompared[] = {&LauncherClaim::rank, &LauncherClaim::size, &LauncherClaim::local_rank,
                               &LauncherClaim::local_size};

std::string shown(const Claimed& c) { return c.variable + "=" + std::to_string(c.value); }

void require_order(const std::string& who, const std::optional<Claimed>& low, const std::optional<Claimed>& high,
                   bool strict, VerdictBuilder& b) {
  if (!low || !high || low->value < high->value || (!strict && low->value == high->value)) return;
  b.add(Status::Fail, who + ": " + shown(*low) + (strict ? " is not below " : " exceeds ") + shown(*high),
        "A rank must be below the size it belongs to: do not set these variables by hand; start the job with one "
        "launcher and let it set them.");
}

void check_values(const LauncherClaim& claim, VerdictBuilder& b) {
  for (const std::string& error : claim.errors) {
    b.add(Status::Fail, claim.launcher + ": " + error,
          "Unset or fix the variable named: launchers set these themselves, and the framework will fail on or "
          "misread a value that is not a number.");
  }
  require_order(claim.launcher, claim.rank, claim.size, true, b);
  require_order(claim.launcher, claim.local_rank, claim.local_size, true, b);
  require_order(claim.launcher, claim.local_size, claim.size, false, b);
}

/// The fields two claims both set but disagree on, as "A=1 but B=2".
std::vector<std::string> disagreements(const LauncherClaim& a, const LauncherClaim& b) {
  std::vector<std::string> out;
  for (const Field field : kCompared) {
    const auto& x = a.*field;
    const auto& y = b.*field;
    if (x && y && x->value != y->value) out.push_back(shown(*x) + " but " + shown(*y));
  }
  return out;
}

std::string variable_of(const LauncherClaim& claim, Field field, const char* fallback) {
  const auto& c = claim.*field;
  return c ? c->variable : fallback;
}

void compare_claim(const LauncherClaim& active, const LauncherClaim& other, VerdictBuilder& b) {
  if (other.role == ClaimRole::Outer) {
    b.note("started by " + other.launcher + " (its variables describe the " + active.launcher +
           " agent, not this process)");
    return;
  }
  const std::vector<std::string> diff = disagreements(other, active);
  if (other.role == ClaimRole::Stale) {
    if (diff.empty()) {
      b.note(other.launcher + " variables of the enclosing allocation agree");
      return;
    }
    b.add(Status::Warn,
          "stale " + other.launcher + " variables under " + active.launcher + ": " + join(diff, ", ") +
              " (they describe the allocation's step, not this rank)",
          "Don't derive the rank from SLURM_PROCID/SLURM_LOCALID/SLURM_NTASKS under " + active.launcher +
              ": read " + variable_of(active, &LauncherClaim::rank, "the MPI rank") +
              " (or launch with srun directly, which sets SLURM_* for every task).");
    return;
  }
  if (!diff.empty()) {
    b.add(Status::Fail, "mixed launchers: " + join(diff, ", "),
          "Two launchers' variables are in this process's environment: start the job with one launcher and do not "
          "export another launcher's variables (OMPI_*, PMI_*, PMIX_*, SLURM_*) from the job script or the "
          "container image.");
  }
}

// torchrun is the framework's own launcher: its claim is read from the framework's variables.
bool is_framework_launcher(const LauncherClaim* active) { return active != nullptr && active->launcher == "torchrun"; }

/// The one fix for rank variables that were set once for every rank, whichever comparison found
/// them (with the launcher's variables or with MPI's own numbers): said once.
std::string framework_fix(const LauncherClaim* active) {
  const std::string launcher = active != nullptr ? active->launcher : std::string("the launcher");
  const std::string rank_var = active != nullptr ? variable_of(*active, &LauncherClaim::rank, "its rank variable")
                                                 : std::string("its rank variable");
  return "Do not export RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE to every rank (`mpirun -x RANK=…`, `export` in "
         "the job script, the image's ENV): under " + launcher + " let the framework read " + rank_var +
         ", or set them per rank in a wrapper script (`export RANK=$" + rank_var + "` …).";
}

void compare_framework(const LauncherClaim& active, const LauncherClaim& framework, VerdictBuilder& b) {
  // "RANK={f0} but OMPI_COMM_WORLD_RANK={l0}": the values are the finding's parameters, so the
  // ranks of one misconfigured job group into one row.
  std::vector<std::string> diff;
  nlohmann::json params = nlohmann::json::object();
  for (const Field field : kCompared) {
    const auto& x = framework.*field;
    const auto& y = active.*field;
    if (!x || !y || x->value == y->value) continue;
    const std::string n = std::to_string(diff.size());
    diff.push_back(x->variable + "={f" + n + "} but " + y->variable + "={l" + n + "}");
    params["f" + n] = x->value;
    params["l" + n] = y->value;
  }
  if (diff.empty()) return;
  b.add(Status::Fail, "launch.env/framework-disagrees-with-launcher", "the framework will read " + join(diff, ", "),
        framework_fix(&active), std::move(params));
}

std::string describe(const LauncherClaim& c) {
  const auto num = [](const std::optional<Claimed>& v) { return v ? std::to_string(v->value) : std::string("?"); };
  std::string s = c.launcher + ": rank " + num(c.rank) + " of " + num(c.size);
  if (c.local_rank || c.local_size) s += ", local " + num(c.local_rank) + " of " + num(c.local_size);
  if (c.node_rank || c.nodes) s += ", node " + num(c.node_rank) + " of " + num(c.nodes);
  return s;
}

bool framework_set(const LauncherClaim& f) { return f.rank || f.size || f.local_rank || f.local_size; }

void check_alone(const LauncherClaim& framework, VerdictBuilder& b) {
  const bool multi = (framework.size && framework.size->value > 1) || (framework.rank && framework.rank->value > 0);
  if (!multi) {
    b.note("no launcher: a world of one");
    return;
  }
  const std::string claim = framework.size ? shown(*framework.size) : shown(*framework.rank);
  b.add(Status::Warn, claim + " says the job has more than one rank, but preflight was started alone (no launcher)",
        "Start preflight the way the job is started (mpirun -np N … preflight, srun … preflight, or torchrun … "
        "preflight) so every rank is checked; or unset RANK/WORLD_SIZE for a single-process run.");
}

/// MPI's own numbers (MPI_Comm_rank/size on MPI_COMM_WORLD and the shared-memory split) against
/// every claim about this process: a variable that disagrees is what the framework or script reads.
void compare_with_mpi(const MpiView& mpi, const LaunchView& view, VerdictBuilder& b) {
  struct Truth {
    Field field;
    std::int64_t value;
    const char* what;
  };
  const Truth truths[] = {{&LauncherClaim::rank, mpi.rank, "rank"},
                          {&LauncherClaim::size, mpi.size, "world size"},
                          {&LauncherClaim::local_rank, mpi.local_rank, "local rank"},
                          {&LauncherClaim::local_size, mpi.local_size, "local size"}};
  std::vector<const LauncherClaim*> claims;
  for (const LauncherClaim& c : view.launchers) {
    if (c.role == ClaimRole::Active || c.role == ClaimRole::Peer) claims.push_back(&c);
  }
  claims.push_back(&view.framework);
  // MPI alone in a world the launcher says is larger: MPI did not connect to the launcher, so its
  // numbers are not the job's truth (each process became its own world of 1).
  if (mpi.size == 1) {
    for (const LauncherClaim* c : claims) {
      if (!c->size || c->size->value <= 1) continue;
      b.add(Status::Warn,
            "MPI started as a world of 1 while " + shown(*c->size) + " (" + c->launcher +
                "): MPI is not connected to the launcher, so every process is its own world",
            "Start the job so MPI connects to the launcher: `srun --mpi=pmix …` (see `srun --mpi=list`), or the "
            "mpirun of the MPI the program was built with; an MPI job started this way runs N separate worlds of 1.");
      return;
    }
  }
  // One parameter pair per disagreement, so that ranks whose numbers differ but whose finding is
  // the same (RANK=0 on ranks 1..15) group into one row.
  std::vector<std::string> diff;
  nlohmann::json params = nlohmann::json::object();
  bool framework_differs = false;
  for (const LauncherClaim* c : claims) {
    for (const Truth& t : truths) {
      const auto& claimed = (*c).*(t.field);
      if (!claimed || claimed->value == t.value) continue;
      const std::string n = std::to_string(diff.size());
      diff.push_back(claimed->variable + "={claimed" + n + "} but MPI's " + t.what + " is {mpi" + n + "}");
      params["claimed" + n] = claimed->value;
      params["mpi" + n] = t.value;
      framework_differs = framework_differs || c == &view.framework;
    }
  }
  if (diff.empty()) {
    b.note("MPI agrees: rank " + std::to_string(mpi.rank) + " of " + std::to_string(mpi.size) + ", local " +
           std::to_string(mpi.local_rank) + " of " + std::to_string(mpi.local_size));
    return;
  }
  const std::string library = mpi.library.empty() ? std::string("MPI_COMM_WORLD") : mpi.library.substr(0, mpi.library.find(','));
  b.add(Status::Fail, framework_differs ? "launch.env/framework-disagrees-with-mpi" : "launch.env/launcher-disagrees-with-mpi",
        "the environment disagrees with MPI (" + library + "): " + join(diff, ", "),
        framework_differs
            ? framework_fix(view.active())
            : "Another launcher's variables were exported into the job (OMPI_*, PMI_*, PMIX_*, SLURM_*): start the job "
              "with one launcher and export none of them.",
        std::move(params));
}

/// The rank variables every delivered rank of the job holds with one and the same value: the
/// framework's RANK, or a launcher's own (exported to every rank from the job script or image).
/// A launcher's stale or outer variables (SLURM_PROCID of the allocation under mpirun) are not
/// counted: they are the same everywhere by design and judged per rank.
std::optional<Verdict> same_rank_everywhere(const CheckContext& ctx) {
  const std::vector<const RankFacts*> ranks = job_ranks(ctx);
  if (ctx.job == nullptr || ranks.size() < 2) return std::nullopt;
  std::map<std::string, std::int64_t> common;  // variable -> the value every rank so far holds
  bool first = true;
  for (const RankFacts* f : ranks) {
    const LaunchView view = detect_launchers(f->env);
    std::map<std::string, std::int64_t> mine;
    const auto take = [&mine](const LauncherClaim& c) {
      if (c.rank) mine[c.rank->variable] = c.rank->value;
    };
    for (const LauncherClaim& c : view.launchers) {
      if (c.role == ClaimRole::Active || c.role == ClaimRole::Peer) take(c);
    }
    take(view.framework);
    if (first) {
      common = std::move(mine);
      first = false;
    } else {
      std::erase_if(common, [&mine](const auto& kv) {
        const auto it = mine.find(kv.first);
        return it == mine.end() || it->second != kv.second;
      });
    }
    if (common.empty()) return std::nullopt;
  }
  std::vector<std::string> claims;
  for (const auto& [variable, value] : common) claims.push_back(variable + "=" + std::to_string(value));
  const std::string said = join(claims, ", ");
  nlohmann::json evidence = {{"variables", claims}, {"ranks", ranks.size()}};
  return Verdict::coded(
      Status::Fail, "launch.env/same-rank-on-every-rank",
      "every rank claims {claims}: all {ranks} ranks read the same rank (`mpirun -x {first}`, or an export in the job "
      "script or image?)",
      "Remove {first} from what every rank inherits (`mpirun -x`, `srun --export`, the job script, the image's ENV) and "
      "let each rank derive it from its launcher: a wrapper with `export RANK=$OMPI_COMM_WORLD_RANK` (Open MPI), "
      "`RANK=$SLURM_PROCID` (srun), or start the job with torchrun, which sets it per rank.",
      {{"claims", said}, {"ranks", ranks.size()}, {"first", claims.front()}}, std::move(evidence));
}

Verdict run(const CheckContext& ctx) {
  const LaunchView view = detect_launchers(ctx.facts.env);
  VerdictBuilder b;
  b.evidence()["launchers"] = view.launchers;
  b.evidence()["framework"] = view.framework;

  const LauncherClaim* active = view.active();
  if (!ctx.facts.placement.launcher_gone.empty()) {
    // Variables that claim a launched job whose launcher is gone: this run was alone, and a
    // framework started from this shell would try to join that job (and hang or abort in init).
    b.add(Status::Warn, "the launcher variables here name a job that is gone: " + ctx.facts.placement.launcher_gone,
          "Unset the PMIX_* variables (and the launcher's others) left in this shell, e.g. "
          "`unset $(env | sed -n 's/^\\(PMIX_[A-Za-z0-9_]*\\)=.*/\\1/p')`, or start the job under a live launcher "
          "(mpirun, srun --mpi=pmix).");
  }
  for (const LauncherClaim& claim : view.launchers) check_values(claim, b);
  if (!is_framework_launcher(active)) check_values(view.framework, b);

  const std::optional<MpiView>& mpi = ctx.facts.placement.mpi;
  if (mpi && !mpi->singleton) {
    b.evidence()["mpi"] = *mpi;
    compare_with_mpi(*mpi, view, b);
  }
  if (active == nullptr) {
    if (!mpi || mpi->singleton) check_alone(view.framework, b);
    return b.build();
  }
  b.note(describe(*active));
  for (const LauncherClaim& other : view.launchers) {
    if (&other != active) compare_claim(*active, other, b);
  }
  if (!is_framework_launcher(active)) {
    compare_framework(*active, view.framework, b);
    b.note(framework_set(view.framework) ? "RANK/WORLD_SIZE agree" : "RANK/WORLD_SIZE not set");
  }
  return b.build();
}

}  // namespace

extern const CheckSpec kLaunchEnv = {
    "launch.env",
    Scope::Rank,
    "launcher variables agree with each other and with RANK/WORLD_SIZE",
    "Reads the variables each launcher sets in this rank's environment, and what torch.distributed will read;\n"
    "under MPI also MPI's own view of this process (MPI_Comm_rank/size, MPI_Comm_split_type shared):\n"
    "  Open MPI   OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE (not OMPI_UNIVERSE_SIZE: that is slots)\n"
    "  Slurm      SLURM_PROCID, SLURM_STEP_NUM_TASKS/SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_NNODES,\n"
    "             SLURM_STEP_TASKS_PER_NODE/SLURM_TASKS_PER_NODE (\"8(x2)\") or SLURM_NTASKS_PER_NODE\n"
    "  PMIx       PMIX_RANK (Open MPI and srun --mpi=pmix export it too, with the same value)\n"
    "  Hydra      PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS (MPICH, Intel MPI)\n"
    "  MVAPICH2   MV2_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE\n"
    "  torchrun   TORCHELASTIC_RUN_ID with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK\n"
    "  framework  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE\n"
    "The innermost launcher (torchrun, then mpirun/mpiexec, then srun, then PMIx) started this process.\n"
    "FAIL  a value that is not a non-negative integer (the framework fails on it or misreads it)\n"
    "FAIL  a rank not below its size, a local rank not below its local size, a local size above the size\n"
    "FAIL  mixed launchers: two launchers at the same level disagree (PMI_RANK=1 next to OMPI_COMM_WORLD_RANK=3)\n"
    "FAIL  RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE disagree with the launcher: usually exported once in the\n"
    "      job script, so every rank reads the same RANK and the job hangs in rendezvous\n"
    "WARN  Slurm variables of the enclosing allocation under mpirun (SLURM_PROCID=0 on every rank): do not\n"
    "      derive the rank from them\n"
    "WARN  RANK/WORLD_SIZE say the job has several ranks, but preflight was started alone\n"
    "FAIL  under MPI: a launcher's or the framework's rank, size, local rank or local size differs from MPI's own\n"
    "      (MPI_Comm_rank/size and the shared-memory split): `mpirun -x RANK=0` makes ranks 1..N-1 read RANK=0\n"
    "FAIL  in a job: every rank holds the same rank variable (RANK=0 on all ranks): one job-level finding,\n"
    "      code launch.env/same-rank-on-every-rank, in place of one row per rank\n"
    "WARN  under MPI: MPI started as a world of 1 while a launcher claims more ranks (srun without --mpi=pmix)\n"
    "WARN  PMIX_* variables name a PMIx server that does not answer (left from another job, or a launcher\n"
    "      that is gone): preflight ran alone; a framework started from this shell would try to join it\n"
    "Not an error: torchrun under srun has SLURM_PROCID = the node's index (srun started the agent).\n"
    "Fix: start the job with one launcher; do not export rank variables in the job script; under mpirun set\n"
    "RANK=$OMPI_COMM_WORLD_RANK (etc.) in a per-rank wrapper if the framework needs them; start preflight the\n"
    "way the job is started.",
    kInNode | kInJob,
    "an image build has no launcher; the launch environment is checked when the job starts",
    &run, "placement",
    false, {}, {},
    &same_rank_everywhere,
};

}  // namespace preflight
