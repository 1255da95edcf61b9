// SPDX-License-Identifier: MIT
// launch.env (rank): do the launchers' variables in this process agree with each other and with
// what the framework will read (RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE), and is everything
// torch.distributed's env:// rendezvous reads set where the job uses it? Where the run
// initialised MPI, every claim is also compared with MPI's own rank, size, local rank and local size.
#include <array>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "checks/check.hpp"
#include "core/launch.hpp"
#include "core/text.hpp"

namespace preflight {
namespace launch_env_check {
namespace {

using Field = std::optional<Claimed> LauncherClaim::*;

constexpr Field kCompared[] = {&LauncherClaim::rank, &LauncherClaim::size, &LauncherClaim::local_rank,
                               &LauncherClaim::local_size};

#define PREFLIGHT_ORDER_FIX                                                                                  \
  "A rank must be below the size it belongs to: do not set these variables by hand; start the job with one " \
  "launcher and let it set them."
// The fix for rank variables that were set once for every rank, whichever comparison found them (with the
// launcher's variables or with MPI's own numbers): said once.
#define PREFLIGHT_FRAMEWORK_FIX                                                                                         \
  "Do not export RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE to every rank (`mpirun -x RANK=…`, `export` in the job " \
  "script, the image's ENV): under {launcher} let the framework read {rank_variable}, or set them per rank in a "       \
  "wrapper script (`export RANK=${rank_variable}` …)."

constexpr FindingSpec kLauncherGone = {
    "launch.env/launcher-gone", Status::Warn, "the launcher variables here name a job that is gone: {why}",
    "Unset the PMIX_* variables (and the launcher's others) left in this shell, e.g. "
    "`unset $(env | sed -n 's/^\\(PMIX_[A-Za-z0-9_]*\\)=.*/\\1/p')`, or start the job under a live launcher "
    "(mpirun, srun --mpi=pmix)."};
constexpr FindingSpec kLauncherUnreachable = {
    "launch.env/launcher-unreachable", Status::Fail,
    "this rank could not reach its launcher's PMIx server and ran alone, outside the job: {why}",
    "Raise the open-files limit of the job's processes (`ulimit -n` in the job script, LimitNOFILE= of the service "
    "that starts the launcher, `srun --propagate=NOFILE`); see host.limits for this rank's limits."};
constexpr FindingSpec kNotANumber = {
    "launch.env/not-a-number", Status::Fail, "{claim}: {error}",
    "Unset or fix the variable named: launchers set these themselves, and the framework will fail on or misread a "
    "value that is not a number."};
constexpr FindingSpec kRankNotBelowSize = {"launch.env/rank-not-below-size", Status::Fail,
                                           "{claim}: {rank_name}={rank} is not below {size_name}={size}",
                                           PREFLIGHT_ORDER_FIX};
constexpr FindingSpec kLocalRankNotBelowLocalSize = {
    "launch.env/local-rank-not-below-local-size", Status::Fail,
    "{claim}: {local_rank_name}={local_rank} is not below {local_size_name}={local_size}", PREFLIGHT_ORDER_FIX};
constexpr FindingSpec kLocalSizeAboveSize = {"launch.env/local-size-above-size", Status::Fail,
                                             "{claim}: {local_size_name}={local_size} exceeds {size_name}={size}",
                                             PREFLIGHT_ORDER_FIX};
// {disagreements}: "SLURM_PROCID={stale0} but OMPI_COMM_WORLD_RANK={current0}, …" (the variables named, the values
// as parameters).
constexpr FindingSpec kStaleVariables = {
    "launch.env/stale-launcher-variables", Status::Warn,
    "stale {stale} variables under {launcher}: {disagreements} (they describe the allocation's step, not this rank)",
    "Don't derive the rank from SLURM_PROCID/SLURM_LOCALID/SLURM_NTASKS under {launcher}: read {rank_source} (or "
    "launch with srun directly, which sets SLURM_* for every task)."};
// {disagreements}: "PMI_RANK={peer0} but OMPI_COMM_WORLD_RANK={active0}, …".
constexpr FindingSpec kMixedLaunchers = {
    "launch.env/mixed-launchers", Status::Fail, "mixed launchers: {disagreements}",
    "Two launchers' variables are in this process's environment: start the job with one launcher and do not export "
    "another launcher's variables (OMPI_*, PMI_*, PMIX_*, SLURM_*) from the job script or the container image."};
// {disagreements}: "RANK={f0} but OMPI_COMM_WORLD_RANK={l0}, …".
constexpr FindingSpec kFrameworkDisagreesWithLauncher = {"launch.env/framework-disagrees-with-launcher", Status::Fail,
                                                         "the framework will read {disagreements}",
                                                         PREFLIGHT_FRAMEWORK_FIX};
constexpr FindingSpec kRanksWithoutLauncher = {
    "launch.env/ranks-without-launcher", Status::Warn,
    "{variable}={value} says the job has more than one rank, but preflight was started alone (no launcher)",
    "Start preflight the way the job is started (mpirun -np N … preflight, srun … preflight, or torchrun … "
    "preflight) so every rank is checked; or unset RANK/WORLD_SIZE for a single-process run."};
constexpr FindingSpec kOutsideSlurmStep = {
    "launch.env/outside-slurm-step", Status::Warn,
    "Slurm's variables claim {size_variable}={size} tasks, but no srun step started this process ({why}): preflight "
    "checked this node alone, and a framework that reads them here waits for tasks that never start",
    "Start the job's tasks with srun, as the job will run: `srun --mpi=pmix preflight` checks all {size} together; in "
    "the batch script, start the training with srun (or mpirun, torchrun) too, not directly."};
constexpr FindingSpec kVariablesLeft = {
    "launch.env/launcher-variables-left", Status::Warn,
    "{size_variable}={size} claims a job of {size} ranks, but no launch started this process ({why}): preflight "
    "checked this process alone, and a framework that reads them here waits for ranks that never start",
    "Unset them where they come from: this shell (`unset $(env | sed -n "
    "'s/^\\(OMPI_COMM_WORLD_[A-Z_]*\\)=.*/\\1/p')`), a saved environment sourced again, the image's ENV; or start "
    "the job with mpirun as it will run (`mpirun -np {size} … preflight`)."};
constexpr FindingSpec kMpiWorldOfOne = {
    "launch.env/mpi-world-of-one", Status::Warn,
    "MPI started as a world of 1 while {variable}={claimed_size} ({claimed_by}): MPI is not connected to the launcher, "
    "so every process is its own world",
    "Start the job so MPI connects to the launcher: `srun --mpi=pmix …` (see `srun --mpi=list`), or the mpirun of the "
    "MPI the program was built with; an MPI job started this way runs N separate worlds of 1."};
// {disagreements}: "RANK={claimed0} but MPI's rank is {mpi0}, …".
constexpr FindingSpec kFrameworkDisagreesWithMpi = {"launch.env/framework-disagrees-with-mpi", Status::Fail,
                                                    "the environment disagrees with MPI ({library}): {disagreements}",
                                                    PREFLIGHT_FRAMEWORK_FIX};
constexpr FindingSpec kLauncherDisagreesWithMpi = {
    "launch.env/launcher-disagrees-with-mpi", Status::Fail,
    "the environment disagrees with MPI ({library}): {disagreements}",
    "Another launcher's variables were exported into the job (OMPI_*, PMI_*, PMIX_*, SLURM_*): start the job with one "
    "launcher and export none of them."};
constexpr FindingSpec kSameRankOnEveryRank = {
    "launch.env/same-rank-on-every-rank", Status::Fail,
    "every rank claims {claims}: all {ranks} ranks read the same rank (`mpirun -x {first}`, or an export in the job "
    "script or image?)",
    "Remove {first} from what every rank inherits (`mpirun -x`, `srun --export`, the job script, the image's ENV) and "
    "let each rank derive it from its launcher: a wrapper with `export RANK=$OMPI_COMM_WORLD_RANK` (Open MPI), "
    "`RANK=$SLURM_PROCID` (srun), or start the job with torchrun, which sets it per rank."};
// torch.distributed's env:// rendezvous (init_process_group's default init_method) reads RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT, in that order, and raises at the first one not set or
// empty (torch/distributed/rendezvous.py, _env_rendezvous_handler). {present}: what says the job
// uses it ("WORLD_SIZE", "RANK and WORLD_SIZE", "TORCHELASTIC_RUN_ID (torchrun)").
#define PREFLIGHT_ENV_RENDEZVOUS(var)                                                                                  \
  "with {present} set, torch.distributed's env:// rendezvous (init_process_group's default) reads " var                \
  ", which is not set: init_process_group fails with \"Error initializing torch.distributed using env:// rendezvous: " \
  "environment variable " var " expected, but not set\""
constexpr FindingSpec kRankNotSet = {
    "launch.env/rank-not-set", Status::Fail, PREFLIGHT_ENV_RENDEZVOUS("RANK"),
    "Set RANK for every rank to its own rank, never one value for all: from the launcher in a per-rank wrapper "
    "(`export RANK=$OMPI_COMM_WORLD_RANK` under mpirun, `export RANK=$SLURM_PROCID` under srun), or start the job "
    "with torchrun, which sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT."};
constexpr FindingSpec kWorldSizeNotSet = {
    "launch.env/world-size-not-set", Status::Fail, PREFLIGHT_ENV_RENDEZVOUS("WORLD_SIZE"),
    "Set WORLD_SIZE to the job's number of ranks, the same on every rank (`export WORLD_SIZE=$OMPI_COMM_WORLD_SIZE` "
    "under mpirun, `export WORLD_SIZE=$SLURM_NTASKS` under srun), or start the job with torchrun, which sets it."};
constexpr FindingSpec kMasterNotSet = {
    "launch.env/master-not-set", Status::Warn,
    "with {present} set, torch.distributed's env:// rendezvous (init_process_group's default) reads MASTER_ADDR and "
    "MASTER_PORT, and neither is set: init_process_group fails with \"Error initializing torch.distributed using "
    "env:// rendezvous: environment variable MASTER_ADDR expected, but not set\" unless the job passes its own "
    "init_method (tcp://, file://) or its launcher sets them at run time",
    "Set both for the whole job in the job script, before the launcher starts the ranks: `export MASTER_ADDR=<rank "
    "0's host on the network the nodes share>` (under Slurm: `$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head "
    "-n 1)`) and `export MASTER_PORT=29500` (a free port on that host); torchrun sets them itself."};
#undef PREFLIGHT_ENV_RENDEZVOUS
#undef PREFLIGHT_FRAMEWORK_FIX
#undef PREFLIGHT_ORDER_FIX

constexpr std::array kFindings = {kLauncherGone,
                                  kLauncherUnreachable,
                                  kNotANumber,
                                  kRankNotBelowSize,
                                  kLocalRankNotBelowLocalSize,
                                  kLocalSizeAboveSize,
                                  kStaleVariables,
                                  kMixedLaunchers,
                                  kFrameworkDisagreesWithLauncher,
                                  kRanksWithoutLauncher,
                                  kOutsideSlurmStep,
                                  kVariablesLeft,
                                  kMpiWorldOfOne,
                                  kFrameworkDisagreesWithMpi,
                                  kLauncherDisagreesWithMpi,
                                  kSameRankOnEveryRank,
                                  kRankNotSet,
                                  kWorldSizeNotSet,
                                  kMasterNotSet};

/// Where two sources of one number disagree, said as "RANK={f0} but OMPI_COMM_WORLD_RANK={l0}": the
/// variables are named in the text and the values are parameters, so that the ranks whose values differ
/// but whose finding is the same (RANK=0 on ranks 1..15) group into one row that says the values together.
struct Disagreements {
  std::vector<std::string> items;
  nlohmann::json params = nlohmann::json::object();

  /// "<left>={<a>N}<middle>{<b>N}", N the item's index.
  void add(const std::string& left, const char* a, std::int64_t a_value, const std::string& middle, const char* b,
           std::int64_t b_value) {
    const std::string n = std::to_string(items.size());
    items.push_back(left + "={" + a + n + "}" + middle + "{" + b + n + "}");
    params[a + n] = a_value;
    params[b + n] = b_value;
  }
  bool empty() const { return items.empty(); }
};

/// The finding `spec` with its {disagreements} written out, reported with `params` and the values of `d`.
void add_disagreements(VerdictBuilder& b, const FindingSpec& spec, const Disagreements& d, nlohmann::json params) {
  params.update(d.params);
  params["disagreements"] = template_param(join(d.items, ", "));
  b.add(spec, std::move(params));
}

void check_values(const LauncherClaim& claim, VerdictBuilder& b) {
  for (const std::string& error : claim.errors) b.add(kNotANumber, {{"claim", claim.launcher}, {"error", error}});
  const auto& rank = claim.rank;
  const auto& size = claim.size;
  const auto& local_rank = claim.local_rank;
  const auto& local_size = claim.local_size;
  if (rank && size && rank->value >= size->value) {
    b.add(kRankNotBelowSize, {{"claim", claim.launcher},
                              {"rank_name", rank->variable},
                              {"rank", rank->value},
                              {"size_name", size->variable},
                              {"size", size->value}});
  }
  if (local_rank && local_size && local_rank->value >= local_size->value) {
    b.add(kLocalRankNotBelowLocalSize, {{"claim", claim.launcher},
                                        {"local_rank_name", local_rank->variable},
                                        {"local_rank", local_rank->value},
                                        {"local_size_name", local_size->variable},
                                        {"local_size", local_size->value}});
  }
  if (local_size && size && local_size->value > size->value) {
    b.add(kLocalSizeAboveSize, {{"claim", claim.launcher},
                                {"local_size_name", local_size->variable},
                                {"local_size", local_size->value},
                                {"size_name", size->variable},
                                {"size", size->value}});
  }
}

/// The fields two claims both set but disagree on, as "A={<a>N} but B={<b>N}".
Disagreements disagreements(const LauncherClaim& x, const char* a, const LauncherClaim& y, const char* b) {
  Disagreements d;
  for (const Field field : kCompared) {
    const auto& left = x.*field;
    const auto& right = y.*field;
    if (left && right && left->value != right->value) {
      d.add(left->variable, a, left->value, " but " + right->variable + "=", b, right->value);
    }
  }
  return d;
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
  if (other.role == ClaimRole::Stale) {
    const Disagreements diff = disagreements(other, "stale", active, "current");
    if (diff.empty()) {
      b.note(other.launcher + " variables of the enclosing allocation agree");
      return;
    }
    add_disagreements(b, kStaleVariables, diff,
                      {{"stale", other.launcher},
                       {"launcher", active.launcher},
                       {"rank_source", variable_of(active, &LauncherClaim::rank, "the MPI rank")}});
    return;
  }
  const Disagreements diff = disagreements(other, "peer", active, "active");
  if (!diff.empty()) add_disagreements(b, kMixedLaunchers, diff, nlohmann::json::object());
}

// torchrun is the framework's own launcher: its claim is read from the framework's variables.
bool is_framework_launcher(const LauncherClaim* active) { return active != nullptr && active->launcher == "torchrun"; }

/// The parameters of the fix for rank variables set once for every rank (PREFLIGHT_FRAMEWORK_FIX).
nlohmann::json framework_fix_params(const LauncherClaim* active) {
  const std::string launcher = active != nullptr ? active->launcher : std::string("the launcher");
  const std::string rank_var = active != nullptr ? variable_of(*active, &LauncherClaim::rank, "its rank variable")
                                                 : std::string("its rank variable");
  return {{"launcher", launcher}, {"rank_variable", rank_var}};
}

void compare_framework(const LauncherClaim& active, const LauncherClaim& framework, VerdictBuilder& b) {
  const Disagreements diff = disagreements(framework, "f", active, "l");
  if (!diff.empty()) add_disagreements(b, kFrameworkDisagreesWithLauncher, diff, framework_fix_params(&active));
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
  const Claimed& claim = framework.size ? *framework.size : *framework.rank;
  b.add(kRanksWithoutLauncher, {{"variable", claim.variable}, {"value", claim.value}});
}

/// torch.distributed's env:// rendezvous, judged as torch judges it where the environment says the
/// job uses it (RANK or WORLD_SIZE set, or torchrun started this process): RANK, WORLD_SIZE,
/// MASTER_ADDR and MASTER_PORT must each be set and not empty. A variable set to something that is
/// not a number is not-a-number's finding; one of MASTER_ADDR/MASTER_PORT set without the other is
/// net.master's (it judges the pair), so here only both missing.
void check_env_rendezvous(const EnvSnapshot& env, const LauncherClaim* active, VerdictBuilder& b) {
  const auto set = [&env](std::string_view name) {
    const std::optional<std::string> value = env.get(name);
    return value && !value->empty();
  };
  std::vector<std::string> present;
  for (std::string_view name : {"RANK", "WORLD_SIZE"}) {
    if (env.has(name)) present.emplace_back(name);
  }
  if (present.empty() && is_framework_launcher(active)) present.emplace_back("TORCHELASTIC_RUN_ID (torchrun)");
  if (present.empty()) return;
  const nlohmann::json params = {{"present", join(present, " and ")}};
  if (!env.has("RANK")) b.add(kRankNotSet, params);
  if (!env.has("WORLD_SIZE")) b.add(kWorldSizeNotSet, params);
  if (!set("MASTER_ADDR") && !set("MASTER_PORT")) b.add(kMasterNotSet, params);
}

/// MPI's own numbers (MPI_Comm_rank/size on MPI_COMM_WORLD, and the node's ranks as MPI knows them:
/// the launcher's PMIx local peers, else MPI_Comm_split_type shared) against
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
      b.add(kMpiWorldOfOne,
            {{"variable", c->size->variable}, {"claimed_size", c->size->value}, {"claimed_by", c->launcher}});
      return;
    }
  }
  Disagreements diff;
  bool framework_differs = false;
  for (const LauncherClaim* c : claims) {
    for (const Truth& t : truths) {
      const auto& claimed = (*c).*(t.field);
      if (!claimed || claimed->value == t.value) continue;
      diff.add(claimed->variable, "claimed", claimed->value, std::string(" but MPI's ") + t.what + " is ", "mpi",
               t.value);
      framework_differs = framework_differs || c == &view.framework;
    }
  }
  if (diff.empty()) {
    b.note("MPI agrees: rank " + std::to_string(mpi.rank) + " of " + std::to_string(mpi.size) + ", local " +
           std::to_string(mpi.local_rank) + " of " + std::to_string(mpi.local_size));
    return;
  }
  const std::string library =
      mpi.library.empty() ? std::string("MPI_COMM_WORLD") : mpi.library.substr(0, mpi.library.find(','));
  nlohmann::json params = framework_differs ? framework_fix_params(view.active()) : nlohmann::json::object();
  params["library"] = library;
  add_disagreements(b, framework_differs ? kFrameworkDisagreesWithMpi : kLauncherDisagreesWithMpi, diff,
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
  return Verdict::of(kSameRankOnEveryRank, {{"claims", said}, {"ranks", ranks.size()}, {"first", claims.front()}},
                     std::move(evidence));
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
    b.add(kLauncherGone, {{"why", ctx.facts.placement.launcher_gone}});
  }
  if (!ctx.facts.placement.launcher_unreachable.empty()) {
    // The launcher may be live, but this process could not reach it (out of descriptors): the job
    // cannot run with this rank as it is.
    b.add(kLauncherUnreachable, {{"why", ctx.facts.placement.launcher_unreachable}});
  }
  for (const LauncherClaim& claim : view.launchers) check_values(claim, b);
  if (!is_framework_launcher(active)) check_values(view.framework, b);

  const std::optional<MpiView>& mpi = ctx.facts.placement.mpi;
  if (mpi && !mpi->singleton) {
    b.evidence()["mpi"] = *mpi;
    compare_with_mpi(*mpi, view, b);
  }
  if (active == nullptr) {
    for (const LauncherClaim& claim : view.launchers) {
      if (claim.outside_step.empty()) continue;
      if (claim.size && claim.size->value > 1) {
        b.add(claim.launcher == "slurm" ? kOutsideSlurmStep : kVariablesLeft,
              {{"size_variable", claim.size->variable}, {"size", claim.size->value}, {"why", claim.outside_step}});
      } else {
        b.note(claim.launcher + ": " + claim.outside_step + ", a job of one task");
      }
    }
    if (!mpi || mpi->singleton) check_alone(view.framework, b);
    check_env_rendezvous(ctx.facts.env, active, b);
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
  check_env_rendezvous(ctx.facts.env, active, b);
  return b.build();
}

}  // namespace

extern const CheckSpec kLaunchEnv = {
    "launch.env",
    Scope::Rank,
    "launcher variables agree with each other and with RANK/WORLD_SIZE",
    "Reads the variables each launcher sets in this rank's environment, and what torch.distributed will read;\n"
    "under MPI also MPI's own view of this process (MPI_Comm_rank/size; its node's ranks from the launcher's\n"
    "PMIx local peers, what MPI's own locality is made of, else MPI_Comm_split_type shared):\n"
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
    "WARN  in a Slurm batch script (SLURM_PROCID without SLURM_STEP_ID: no srun step started the process) whose\n"
    "      allocation has several tasks: the run checks this node alone (a world of one), and a framework that\n"
    "      reads SLURM_PROCID/SLURM_NTASKS there waits for tasks that never start;\n"
    "      run `srun --mpi=pmix preflight`\n"
    "FAIL  under MPI: a launcher's or the framework's rank, size, local rank or local size differs from MPI's own\n"
    "      (MPI_Comm_rank/size and the node's ranks): `mpirun -x RANK=0` makes ranks 1..N-1 read RANK=0\n"
    "FAIL  in a job: every rank holds the same rank variable (RANK=0 on all ranks): one job-level finding,\n"
    "      code launch.env/same-rank-on-every-rank, in place of one row per rank\n"
    "FAIL  torch.distributed's env:// rendezvous (init_process_group's default init_method) is used, as RANK or\n"
    "      WORLD_SIZE is set (or torchrun started the process), but one of what it reads is not set: RANK,\n"
    "      WORLD_SIZE, or MASTER_ADDR and MASTER_PORT both (one of the two without the other: net.master). torch\n"
    "      raises \"environment variable RANK expected, but not set\" at the first one missing; each is named with\n"
    "      its fix. MASTER_ADDR/MASTER_PORT alone do not say the job uses env:// (Lightning under srun exports\n"
    "      them and passes the rank it reads from SLURM_PROCID to init_process_group itself)\n"
    "WARN  under MPI: MPI started as a world of 1 while a launcher claims more ranks (srun without --mpi=pmix)\n"
    "WARN  OMPI_COMM_WORLD_* variables claim several ranks without the PMIx variables (PMIX_RANK,\n"
    "      PMIX_NAMESPACE) every mpirun gives the processes it starts: left in the environment (a saved\n"
    "      environment, an image's ENV); preflight runs alone, as the launch checks (launch.ranks, comm.*) say\n"
    "WARN  PMIX_* variables name a PMIx server that does not answer (left from another job, or a launcher\n"
    "      that is gone): preflight ran alone; a framework started from this shell would try to join it\n"
    "FAIL  this rank could not reach its launcher's PMIx server because of its own limits (out of open files:\n"
    "      EMFILE): it ran alone, outside the job, and waits for the run's deadline so that the launcher does\n"
    "      not end the job before the reporting rank reports\n"
    "Not an error: torchrun under srun has SLURM_PROCID = the node's index (srun started the agent).\n"
    "Fix: start the job with one launcher; do not export rank variables in the job script; under mpirun set\n"
    "RANK=$OMPI_COMM_WORLD_RANK (etc.) in a per-rank wrapper if the framework needs them; start preflight the\n"
    "way the job is started.",
    kInNode | kInJob,
    "an image build has no launcher; the launch environment is checked when the job starts",
    &run,
    "placement",
    false,
    {},
    {},
    &same_rank_everywhere,
    kFindings,
};

}  // namespace launch_env_check
}  // namespace preflight
