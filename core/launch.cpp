// SPDX-License-Identifier: MIT
#include "core/launch.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/text.hpp"

namespace preflight {
namespace {

// Nesting depth: a launcher of a lower depth runs inside one of a higher depth (torchrun under
// mpirun or srun; mpirun inside a Slurm allocation; PMIx is the wire protocol of the others).
enum class Family { Torchrun = 0, Mpi = 1, Slurm = 2, Pmix = 3 };

using Field = std::optional<Claimed> LauncherClaim::*;

struct FieldSpec {
  Field field;
  std::vector<std::string_view> names;  // the first one that is set wins
};

struct LauncherSpec {
  std::string_view name;
  Family family;
  std::vector<std::string_view> markers;  // any of them set: the launcher is present
  std::vector<FieldSpec> fields;
  std::vector<std::string_view> extra;  // recorded as evidence only
  void (*finish)(const EnvSnapshot&, LauncherClaim&) = nullptr;
};

void slurm_finish(const EnvSnapshot& env, LauncherClaim& claim);
void openmpi_finish(const EnvSnapshot& env, LauncherClaim& claim);

const std::vector<LauncherSpec>& launcher_specs() {
  using C = LauncherClaim;
  static const std::vector<LauncherSpec> kSpecs = {
      {"torchrun",
       Family::Torchrun,
       {"TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS"},
       {{&C::rank, {"RANK"}},
        {&C::size, {"WORLD_SIZE"}},
        {&C::local_rank, {"LOCAL_RANK"}},
        {&C::local_size, {"LOCAL_WORLD_SIZE"}},
        {&C::node_rank, {"GROUP_RANK"}},
        {&C::nodes, {"GROUP_WORLD_SIZE"}}},
       {"TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT"}},
      // OMPI_COMM_WORLD_NODE_RANK is the rank among this job's processes on the node, and
      // OMPI_UNIVERSE_SIZE the slot count: neither is a node index or a world size.
      {"openmpi",
       Family::Mpi,
       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
       {{&C::rank, {"OMPI_COMM_WORLD_RANK"}},
        {&C::size, {"OMPI_COMM_WORLD_SIZE"}},
        {&C::local_rank, {"OMPI_COMM_WORLD_LOCAL_RANK"}},
        {&C::local_size, {"OMPI_COMM_WORLD_LOCAL_SIZE"}}},
       {},
       &openmpi_finish},
      {"hydra",
       Family::Mpi,
       {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
       {{&C::rank, {"PMI_RANK"}},
        {&C::size, {"PMI_SIZE"}},
        {&C::local_rank, {"MPI_LOCALRANKID"}},
        {&C::local_size, {"MPI_LOCALNRANKS"}}},
       {}},
      {"mvapich2",
       Family::Mpi,
       {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},
       {{&C::rank, {"MV2_COMM_WORLD_RANK"}},
        {&C::size, {"MV2_COMM_WORLD_SIZE"}},
        {&C::local_rank, {"MV2_COMM_WORLD_LOCAL_RANK"}},
        {&C::local_size, {"MV2_COMM_WORLD_LOCAL_SIZE"}}},
       {}},
      {"slurm",
       Family::Slurm,
       {"SLURM_PROCID"},
       {{&C::rank, {"SLURM_PROCID"}},
        {&C::size, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"}},
        {&C::local_rank, {"SLURM_LOCALID"}},
        {&C::node_rank, {"SLURM_NODEID"}},
        {&C::nodes, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"}}},
       {"SLURM_JOB_ID", "SLURM_STEP_ID"},
       &slurm_finish},
      {"pmix", Family::Pmix, {"PMIX_RANK"}, {{&C::rank, {"PMIX_RANK"}}}, {"PMIX_NAMESPACE"}},
  };
  return kSpecs;
}

const LauncherSpec* spec_of(const LauncherClaim& claim) {
  for (const LauncherSpec& spec : launcher_specs()) {
    if (spec.name == claim.launcher) return &spec;
  }
  return nullptr;
}

Family family_of(const LauncherClaim& claim) {
  const LauncherSpec* spec = spec_of(claim);
  return spec ? spec->family : Family::Pmix;
}

void record(const std::string& name, const std::string& value, LauncherClaim& claim) {
  claim.variables.push_back(name + "=" + printable(value, 60));
}

std::optional<Claimed> read_number(const EnvSnapshot& env, std::string_view name, LauncherClaim& claim) {
  const std::optional<std::string> raw = env.get(name);
  if (!raw) return std::nullopt;
  record(std::string(name), *raw, claim);
  const std::optional<std::int64_t> value = parse_int(*raw);
  if (!value || *value < 0) {
    claim.errors.push_back(std::string(name) + "='" + printable(*raw, 40) + "' is not a non-negative integer");
    return std::nullopt;
  }
  return Claimed{*value, std::string(name)};
}

void read_field(const EnvSnapshot& env, const FieldSpec& spec, LauncherClaim& claim) {
  for (std::string_view name : spec.names) {
    if (env.has(name)) {
      claim.*spec.field = read_number(env, name, claim);
      return;
    }
  }
}

std::optional<LauncherClaim> read_claim(const EnvSnapshot& env, const LauncherSpec& spec) {
  const bool present = std::any_of(spec.markers.begin(), spec.markers.end(), [&](auto m) { return env.has(m); });
  if (!present) return std::nullopt;
  LauncherClaim claim;
  claim.launcher = std::string(spec.name);
  for (const FieldSpec& field : spec.fields) read_field(env, field, claim);
  for (std::string_view name : spec.extra) {
    if (const auto value = env.get(name)) record(std::string(name), *value, claim);
  }
  if (spec.finish) spec.finish(env, claim);
  return claim;
}

// srun exports SLURM_STEP_ID (and the older SLURM_STEPID) to every task of a step. The job's batch
// script has SLURM_PROCID=0 and the allocation's SLURM_NTASKS too, but no step of its own (Slurm's
// batch and extern steps, where a version names them, are 0xfffffffe and 0xfffffffd).
std::string slurm_outside_step(const EnvSnapshot& env, LauncherClaim& claim) {
  for (std::string_view name : {"SLURM_STEP_ID", "SLURM_STEPID"}) {
    const std::optional<std::string> step = env.get(name);
    if (!step) continue;
    if (name != "SLURM_STEP_ID") record(std::string(name), *step, claim);
    if (*step == "4294967294" || *step == "batch")
      return std::string(name) + "=" + printable(*step, 20) + ": the batch step";
    if (*step == "4294967293" || *step == "extern")
      return std::string(name) + "=" + printable(*step, 20) + ": the extern step";
    return {};
  }
  return "no SLURM_STEP_ID: the job's batch script, not a task srun started";
}

// Open MPI's mpirun (ORTE since 2.0, PRRTE since 5.0) starts every process with the PMIx variables
// its MPI_Init connects through (PMIX_RANK, PMIX_NAMESPACE, PMIX_SERVER_URI*). OMPI_COMM_WORLD_*
// without any of them were not set by a launch: a saved environment sourced again, an image's ENV,
// a shell left from an old job. Such a claim describes no process that is running, this one least.
void openmpi_finish(const EnvSnapshot& env, LauncherClaim& claim) {
  if (env.has("PMIX_RANK") || env.has("PMIX_NAMESPACE")) return;
  claim.outside_step =
      "no PMIX_RANK or PMIX_NAMESPACE, which mpirun gives every process it starts: the OMPI_COMM_WORLD_* variables "
      "were left in the environment, not set by a launch";
}

// Whether a step started this process; and the local size: Slurm gives the tasks of every node of
// the step ("8(x2),4"), this node's entry is it.
void slurm_finish(const EnvSnapshot& env, LauncherClaim& claim) {
  claim.outside_step = slurm_outside_step(env, claim);
  for (std::string_view name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"}) {
    const std::optional<std::string> raw = env.get(name);
    if (!raw) continue;
    record(std::string(name), *raw, claim);
    const auto counts = parse_tasks_per_node(*raw);
    if (!counts) {
      claim.errors.push_back(std::string(name) + "='" + printable(*raw, 40) + "' is not a Slurm tasks-per-node list");
    } else if (counts->size() == 1) {
      claim.local_size = Claimed{counts->front(), std::string(name)};
    } else if (claim.node_rank && static_cast<std::uint64_t>(claim.node_rank->value) < counts->size()) {
      claim.local_size = Claimed{(*counts)[static_cast<std::size_t>(claim.node_rank->value)], std::string(name)};
    } else if (claim.node_rank) {
      claim.errors.push_back(std::string(name) + "='" + printable(*raw, 40) +
                             "' has no entry for SLURM_NODEID=" + std::to_string(claim.node_rank->value));
    }
    return;
  }
}

bool same_value(const std::optional<Claimed>& a, const std::optional<Claimed>& b) {
  return a && b && a->value == b->value;
}

// A second claim that is only the wire protocol of a launcher already seen, not a second launcher:
// Open MPI and `srun --mpi=pmix` both export PMIX_RANK; `srun --mpi=pmi2` exports PMI_RANK/PMI_SIZE
// (without Hydra's MPI_LOCALRANKID).
bool is_protocol_of(const LauncherClaim& guest, const LauncherClaim& host) {
  const Family hf = family_of(host);
  if (guest.launcher == "pmix") return (hf == Family::Mpi || hf == Family::Slurm) && same_value(guest.rank, host.rank);
  if (guest.launcher == "hydra" && host.launcher == "slurm") {
    return !guest.local_rank && same_value(guest.rank, host.rank) && same_value(guest.size, host.size);
  }
  return false;
}

void fold_protocols(std::vector<LauncherClaim>& claims) {
  for (auto guest = claims.begin(); guest != claims.end();) {
    const auto host = std::find_if(claims.begin(), claims.end(),
                                   [&](const LauncherClaim& c) { return &c != &*guest && is_protocol_of(*guest, c); });
    if (host == claims.end()) {
      ++guest;
      continue;
    }
    host->variables.insert(host->variables.end(), guest->variables.begin(), guest->variables.end());
    guest = claims.erase(guest);
  }
}

ClaimRole role_under(const LauncherClaim& active, const LauncherClaim& other) {
  const Family a = family_of(active);
  const Family o = family_of(other);
  // An MPI launcher's variables that no launch set describe no process: never a peer to compare.
  if (o == Family::Mpi && !other.outside_step.empty()) return ClaimRole::Stale;
  if (a == Family::Torchrun) return ClaimRole::Outer;
  // mpirun/mpiexec never come from srun's own environment: Slurm variables next to them are those
  // of the enclosing allocation (the batch step, or the step that started the MPI daemons).
  if (a == Family::Mpi && o == Family::Slurm) return ClaimRole::Stale;
  return ClaimRole::Peer;
}

std::optional<int> as_int(const std::optional<Claimed>& c) {
  if (!c || c->value > std::numeric_limits<int>::max()) return std::nullopt;
  return static_cast<int>(c->value);
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

const char* to_string(ClaimRole role) {
  switch (role) {
    case ClaimRole::Active: return "active";
    case ClaimRole::Outer: return "outer";
    case ClaimRole::Stale: return "stale";
    case ClaimRole::Peer: return "peer";
  }
  return "peer";
}

std::optional<std::vector<std::int64_t>> parse_tasks_per_node(std::string_view text) {
  std::vector<std::int64_t> out;
  for (std::string_view item : split(text, ',')) {
    std::int64_t repeat = 1;
    const std::size_t paren = item.find('(');
    if (paren != std::string_view::npos) {
      const std::string_view rep = item.substr(paren);
      if (rep.size() < 4 || rep.substr(0, 2) != "(x" || rep.back() != ')') return std::nullopt;
      const auto r = parse_int(rep.substr(2, rep.size() - 3));
      if (!r || *r < 1 || *r > 1'000'000) return std::nullopt;
      repeat = *r;
      item = item.substr(0, paren);
    }
    const auto count = parse_int(item);
    if (!count || *count < 0) return std::nullopt;
    // No job has more nodes than one repeat may name: a longer list is garbage, not gigabytes.
    if (out.size() + static_cast<std::size_t>(repeat) > kMaxTasksPerNodeEntries) return std::nullopt;
    out.insert(out.end(), static_cast<std::size_t>(repeat), *count);
  }
  return out;
}

LaunchView detect_launchers(const EnvSnapshot& env) {
  LaunchView view;
  for (const LauncherSpec& spec : launcher_specs()) {
    if (auto claim = read_claim(env, spec)) view.launchers.push_back(std::move(*claim));
  }
  std::stable_sort(view.launchers.begin(), view.launchers.end(),
                   [](const LauncherClaim& a, const LauncherClaim& b) { return family_of(a) < family_of(b); });
  fold_protocols(view.launchers);
  // The innermost launcher that started this process, never a claim outside any launch (a Slurm
  // batch script's variables describe the allocation, Open MPI's without PMIx were left in the
  // environment): with no other launcher there is none.
  const auto active = std::find_if(view.launchers.begin(), view.launchers.end(),
                                   [](const LauncherClaim& c) { return c.outside_step.empty(); });
  for (LauncherClaim& claim : view.launchers) {
    if (active == view.launchers.end()) {
      claim.role = ClaimRole::Stale;
    } else {
      claim.role = &claim == &*active ? ClaimRole::Active : role_under(*active, claim);
    }
  }

  static const std::vector<FieldSpec> kFrameworkFields = {{&LauncherClaim::rank, {"RANK"}},
                                                          {&LauncherClaim::size, {"WORLD_SIZE"}},
                                                          {&LauncherClaim::local_rank, {"LOCAL_RANK"}},
                                                          {&LauncherClaim::local_size, {"LOCAL_WORLD_SIZE"}}};
  view.framework.launcher = "framework";
  for (const FieldSpec& field : kFrameworkFields) read_field(env, field, view.framework);
  return view;
}

Placement placement_from(const LaunchView& view, const Options& options) {
  Placement p;
  p.source = "no launcher";
  if (const LauncherClaim* active = view.active()) {
    p.launcher = active->launcher;
    p.rank = as_int(active->rank).value_or(0);
    p.world_size = std::max(as_int(active->size).value_or(1), 1);
    p.local_rank = as_int(active->local_rank).value_or(0);
    p.nodes = as_int(active->nodes);
    p.node_rank = as_int(active->node_rank);
    if (const auto local = as_int(active->local_size); local && *local > 0) {
      p.local_ranks = *local;
      p.source = active->local_size->variable;
    } else if (p.nodes && *p.nodes > 0) {
      p.local_ranks = ceil_div(p.world_size, *p.nodes);
      p.source = "world size / nodes";
    } else {
      p.source = active->launcher + " does not say how many ranks share the node: assumed 1 (pass --ranks-per-node)";
    }
  }
  if (options.ranks_per_node) {
    p.local_ranks = *options.ranks_per_node;
    p.source = "--ranks-per-node";
  }
  if (!p.nodes && options.expect_nodes) p.nodes = *options.expect_nodes;
  return p;
}

void to_json(nlohmann::json& j, const LauncherClaim& claim) {
  j = nlohmann::json::object();
  j["launcher"] = claim.launcher;
  if (claim.launcher != "framework") j["role"] = to_string(claim.role);
  const std::pair<const char*, const std::optional<Claimed>*> fields[] = {
      {"rank", &claim.rank},
      {"size", &claim.size},
      {"local_rank", &claim.local_rank},
      {"local_size", &claim.local_size},
      {"node_rank", &claim.node_rank},
      {"nodes", &claim.nodes},
  };
  for (const auto& [key, value] : fields) {
    if (*value) j[key] = (*value)->value;
  }
  j["variables"] = claim.variables;
  if (!claim.errors.empty()) j["errors"] = claim.errors;
  if (!claim.outside_step.empty()) j["outside_step"] = claim.outside_step;
}

}  // namespace preflight
