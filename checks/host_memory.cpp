// SPDX-License-Identifier: MIT
// host.memory: the memory this node can still give the job (MemAvailable, and the cgroup limit
// minus what the group already uses) against what its local ranks will need, checkpoint saves
// included. The model is in kExplain.
#include <algorithm>
#include <array>
#include <cmath>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "core/checkpoint_model.hpp"
#include "core/text.hpp"

namespace preflight {
namespace host_memory_check {
namespace {

constexpr double kHeadroom = 0.10;      // WARN when the budget exceeds the need by less than this share
constexpr double kLowAvailable = 0.10;  // WARN when MemAvailable is below this share of MemTotal

constexpr const char* kExplain =
    R"(Reads /proc/meminfo (MemTotal, MemAvailable, SwapTotal, SwapFree) and the memory cgroup of the
process (/proc/self/cgroup, the cgroup mount from /proc/self/mountinfo, then v2 memory.max,
memory.current, memory.swap.max, memory.stat or v1 memory.limit_in_bytes, memory.usage_in_bytes,
memory.memsw.limit_in_bytes, memory.stat), walking up to the mount's root: the smallest limit on
the path is the one in force (groups above the mount's root, e.g. above a container's own group,
are not visible). Inside a container /proc/meminfo shows the host, so the cgroup limit is what
counts.

Budget = min(MemAvailable, cgroup limit - (usage - inactive_file)) when the group is limited,
else MemAvailable. Swap is not counted: a checkpoint save that spills into swap thrashes for hours
instead of finishing; it is reported as evidence.

Need, for L local ranks (--ranks-per-node or the launcher), world size W (the launcher's or
--expect-world-size, the larger), P parameters (--model-params), ZeRO stage Z (--zero-stage,
default 0 when only --model-params is given), tensor-parallel T and pipeline-parallel PP
(--tensor-parallel, --pipeline-parallel, default 1; T × PP must divide W), data-parallel
D = W / (T × PP):
  L × host-bytes-per-rank (--host-bytes-per-rank, default 4 GiB: framework, CUDA context, loaders)
  + what the ranks copy to host memory to save a checkpoint, with 2 B/param of bf16/fp16 weights
  and 12 B/param of optimizer state (fp32 master weights + Adam m and v). A rank holds and saves
  only its model-parallel shard, P/(T × PP) parameters (its tensor slice of its pipeline stage):
    ZeRO-0 (DDP):  S savers × P/(T×PP) × (2 + 12)   model and optimizer states, data-parallel rank 0
    ZeRO-1/2:      S savers × P/(T×PP) × 2 + L × P × 12/W
                   the model states from data-parallel rank 0; every rank its optimizer shard
    ZeRO-3/FSDP:   L × P × 14/W                     sharded state dict: every rank its partition
  S is the most data-parallel-rank-0 ranks on one node, in Megatron-LM's rank order (tensor
  fastest, then data, then pipeline): with T = 8 on 8-GPU nodes a node holds a whole tensor group,
  so S is 8 on the nodes of data-parallel replica 0 and 0 elsewhere; without model parallelism only
  rank 0 saves the model states (S = 1).
  The save rules are the frameworks': DeepSpeed (runtime/engine.py, _configure_checkpointing) saves
  the model states, mp_rank_XX_model_states.pt, only where the data-parallel rank is 0
  (save_non_zero_checkpoint) and the ZeRO optimizer shards, zero_pp_rank_*_optim_states.pt, from
  every rank (save_zero_checkpoint), every rank its partition under ZeRO-3; Megatron-LM
  (megatron/training/checkpointing.py) writes its legacy checkpoints from data-parallel rank 0 of
  each tensor/pipeline group, and with --use-distributed-optimizer each rank writes its optimizer
  shard; its distributed checkpoint (--ckpt-format torch_dist with --ckpt-fully-parallel-save)
  spreads even the replicated weights over the data-parallel ranks, which the ZeRO-3 line bounds.
  The savers are assumed to save at the same time (they do: the save is collective).
Without --model-params only the per-rank baseline is checked.

FAIL   budget < need: the kernel's OOM killer ends a rank with SIGKILL (exit -9) in the middle of a
       checkpoint save. Fix: save sharded (ZeRO-3: DeepSpeed zero_optimization.stage 3 with
       stage3_gather_16bit_weights_on_model_save false; FSDP StateDictType.SHARDED_STATE_DICT),
       run fewer ranks per node, raise the cgroup limit (docker run --memory=..., Kubernetes
       resources.limits.memory, Slurm --mem=...), or state a smaller --host-bytes-per-rank.
FAIL   --tensor-parallel × --pipeline-parallel does not divide the world size: the ranks cannot
       form data-parallel replicas and the framework stops at start (the command line refuses it
       with exit 2 when --expect-world-size is given).
WARN   the budget exceeds the need by less than 10%: a larger batch, more dataloader workers or
       page-cache pressure tips it over. Same fixes.
WARN   MemAvailable is below 10% of MemTotal: other processes (often leftovers of an earlier job)
       hold the memory. Find them with ps -eo pid,rss,etime,cmd --sort=-rss and stop them.
UNKNOWN /proc/meminfo cannot be read or parsed, or the cgroup files exist but cannot be read or
       hold garbage (never PASS on what was not read). No memory controller at all is not an
       error: the budget is MemAvailable.
SKIP   in the image profile: an image build's memory is not the job's.)";

std::uint64_t round_up_gib(double bytes) {
  constexpr double kGiB = 1ull << 30;
  return saturate_bytes(std::ceil(bytes / kGiB) * kGiB);
}

std::string plural(int n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

struct Budget {
  std::uint64_t bytes = 0;
  std::uint64_t mem_available = 0;
  bool cgroup_binds = false;  // the cgroup, not the node's free RAM, sets the budget
  std::string cgroup_path;
  std::uint64_t cgroup_in_use = 0;
  std::string text;  // "31.2 GiB available (MemAvailable 120 GiB; cgroup /job limit 32 GiB, 812 MiB in use)"
};

Budget budget_of(const MemInfo& mem, const CgroupMemory* cgroup) {
  Budget b;
  b.bytes = b.mem_available = mem.mem_available;
  std::string basis = "MemAvailable " + format_bytes(mem.mem_available) + " of " + format_bytes(mem.mem_total);
  if (cgroup != nullptr && cgroup->limit) {
    const std::uint64_t usage = cgroup->usage.value_or(0);
    b.cgroup_in_use = usage - std::min(usage, cgroup->inactive_file.value_or(0));
    const std::uint64_t cgroup_free = *cgroup->limit - std::min(*cgroup->limit, b.cgroup_in_use);
    b.cgroup_binds = cgroup_free < b.bytes;
    b.cgroup_path = cgroup->path;
    b.bytes = std::min(b.bytes, cgroup_free);
    basis += "; cgroup " + cgroup->path + " limit " + format_bytes(*cgroup->limit) + ", " +
             format_bytes(b.cgroup_in_use) + " in use";
  }
  b.text = format_bytes(b.bytes) + " available (" + basis + ")";
  return b;
}

/// The job's shape (core/checkpoint_model.hpp) and the bytes its saving processes hold at the
/// checkpoint peak on top of each rank's baseline (kExplain).
struct Plan : CheckpointPlan {
  std::uint64_t host_bytes_per_rank = 0;

  /// The heaviest rank: what one rank more or less on the node changes.
  double rank_bytes(int stage) const {
    return static_cast<double>(host_bytes_per_rank) + std::max(saver_bytes(stage), other_bytes(stage));
  }
  std::uint64_t need(int stage) const {
    return saturate_bytes(local_ranks * static_cast<double>(host_bytes_per_rank) + node_bytes(stage));
  }

  std::string formula() const {
    const std::string base = std::to_string(local_ranks) + " × " + format_bytes(host_bytes_per_rank);
    return params ? base + " + " + node_formula() : base;
  }

  std::string text() const {
    std::string who = plural(local_ranks, "local rank");
    if (!params) {
      return who + " × " + format_bytes(host_bytes_per_rank) + " need " + format_bytes(need(zero_stage)) +
             " (no --model-params: the checkpoint-save peak is not checked)";
    }
    std::string out =
        who + " saving a " + format_params(*params) + "-parameter ZeRO-" + std::to_string(zero_stage) + " checkpoint";
    if (model_parallel) {
      out += " with tensor-parallel " + std::to_string(tp) + " × pipeline-parallel " + std::to_string(pp) +
             " × data-parallel " + std::to_string(dp());
    }
    if (zero_stage > 0) out += " sharded " + std::to_string(world_size) + " ways";
    out += " need ≈ " + format_bytes(need(zero_stage));
    if (zero_stage < 3) {
      const int s = savers(zero_stage);
      out += " (" + std::to_string(s) + " of them data-parallel rank 0, saving the model states of " +
             (mp() > 1 ? "their 1/" + std::to_string(mp()) + " of the model" : std::string("the whole model")) + ")";
    }
    if (stage_defaulted) out += " (ZeRO-0 assumed: no --zero-stage)";
    if (!world_known && model_parallel)
      out += " (world size " + std::to_string(world_size) + " assumed: no --expect-world-size)";
    return out;
  }
};

Plan plan_of(const CheckContext& ctx) {
  Plan plan;
  static_cast<CheckpointPlan&>(plan) = checkpoint_plan(ctx.facts.placement, ctx.options);
  plan.host_bytes_per_rank = ctx.options.host_bytes_per_rank;
  return plan;
}

// The ways out when the budget does not hold the need, most effective first: {sharded} and
// {fewer_ranks} are each a sentence and a space (over {sharded_need}, {fit_ranks}), or "" where they would
// not help; {more_memory} (over {cgroup} and {cgroup_limit_needed}, or {available})
// raises the cgroup limit or names the node's RAM.
#define PREFLIGHT_MEMORY_FIX                                                                                  \
  "{sharded}{fewer_ranks}{more_memory} If a rank uses less than {per_rank} outside checkpoints, say so with " \
  "--host-bytes-per-rank SIZE."

constexpr FindingSpec kLayoutUndivided = {
    "host.memory/layout-undivided", Status::Fail,
    "--tensor-parallel {tp} × --pipeline-parallel {pp} = {mp} does not divide the world size {world_size}: the job "
    "cannot be laid out in data-parallel replicas (Megatron-LM's initialize_model_parallel raises a RuntimeError at "
    "start)",
    "Start a world size that is a multiple of {mp} ranks, or state the job's real --tensor-parallel and "
    "--pipeline-parallel."};
constexpr FindingSpec kTooLittle = {"host.memory/too-little", Status::Fail, "node has {budget}; {need}",
                                    PREFLIGHT_MEMORY_FIX};
constexpr FindingSpec kLittleHeadroom = {"host.memory/little-headroom", Status::Warn,
                                         "node has {budget}; {need}; only {spare} to spare (< 10%)",
                                         PREFLIGHT_MEMORY_FIX};
constexpr FindingSpec kEnough = {"host.memory/enough", Status::Pass, "node has {budget}; {need}", ""};
constexpr FindingSpec kRamHeldElsewhere = {
    "host.memory/ram-held-elsewhere", Status::Warn,
    "only {available} of {total} RAM is available: other processes hold the rest",
    "Find what holds the memory (ps -eo pid,rss,etime,cmd --sort=-rss | head), often leftovers of an earlier job, and "
    "stop it before the job starts."};
#undef PREFLIGHT_MEMORY_FIX

constexpr FindingSpec kMeminfoUnreadable = {
    "host.memory/meminfo-unreadable", Status::Unknown, kUnreadableMessage,
    "Run preflight where /proc/meminfo is readable and lists MemAvailable (Linux 3.14 or later), or point --sysroot at "
    "a complete capture."};
constexpr FindingSpec kMeminfoHung = {"host.memory/meminfo-hung", Status::Unknown, kHungMessage, kHungProbeRemedy};
constexpr FindingSpec kCgroupUnreadable = {
    "host.memory/cgroup-unreadable", Status::Unknown, kUnreadableMessage,
    "Make the cgroup file system readable where preflight runs (mount /sys/fs/cgroup into the container), or fix the "
    "file named."};
constexpr FindingSpec kCgroupHung = {"host.memory/cgroup-hung", Status::Unknown, kHungMessage, kHungProbeRemedy};

constexpr std::array kFindings = {kMeminfoUnreadable, kMeminfoHung,     kCgroupUnreadable,
                                  kCgroupHung,        kLayoutUndivided, kTooLittle,
                                  kLittleHeadroom,    kEnough,          kRamHeldElsewhere};

/// The parameters of the fix when the budget does not hold the need (PREFLIGHT_MEMORY_FIX).
nlohmann::json fix_params(const Plan& plan, const Budget& budget) {
  const bool shard = plan.params && plan.need(3) < plan.need(plan.zero_stage);
  nlohmann::json p = {{"sharded", part_if(shard,
                                          "Save sharded checkpoints so no process gathers the whole model (ZeRO-3 "
                                          "needs ≈ {sharded_need} here): DeepSpeed zero_optimization.stage 3 with "
                                          "stage3_gather_16bit_weights_on_model_save false, or FSDP "
                                          "StateDictType.SHARDED_STATE_DICT. ")}};
  if (shard) p["sharded_need"] = format_bytes(plan.need(3));
  const double fit = std::floor(static_cast<double>(budget.bytes) / plan.rank_bytes(plan.zero_stage));
  const bool fewer = fit >= 1 && fit < plan.local_ranks;
  p["fewer_ranks"] = part_if(fewer, std::string("Run at most {fit_ranks} ") + (fit == 1 ? "rank" : "ranks") +
                                        " per node (`srun --ntasks-per-node={fit_ranks}`, `mpirun --map-by "
                                        "ppr:{fit_ranks}:node`). ");
  if (fewer) p["fit_ranks"] = static_cast<int>(fit);
  const std::uint64_t need = plan.need(plan.zero_stage);
  if (budget.cgroup_binds && need <= budget.mem_available) {
    const double limit = static_cast<double>(budget.cgroup_in_use) + (1 + kHeadroom) * static_cast<double>(need);
    p["more_memory"] = template_param(
        "Raise the memory limit of cgroup {cgroup} to at least {cgroup_limit_needed} (docker run --memory=…, "
        "Kubernetes resources.limits.memory, Slurm --mem=…).");
    p["cgroup"] = budget.cgroup_path;
    p["cgroup_limit_needed"] = format_bytes(round_up_gib(limit));
  } else {
    p["more_memory"] = template_param("Use nodes with more RAM: this one has {available} available.");
    p["available"] = format_bytes(budget.mem_available);
  }
  p["per_rank"] = format_bytes(plan.host_bytes_per_rank);
  return p;
}

nlohmann::json evidence_of(const MemInfo& mem, const CgroupMemory* cgroup, const Budget& budget, const Plan& plan) {
  return {
      {"mem_total", mem.mem_total},
      {"mem_available", mem.mem_available},
      {"swap_total", mem.swap_total},
      {"swap_free", mem.swap_free},
      {"cgroup_version", cgroup ? cgroup->version : 0},
      {"cgroup_path", cgroup ? nlohmann::json(cgroup->path) : nlohmann::json()},
      {"cgroup_limit", cgroup ? nlohmann::json(cgroup->limit) : nlohmann::json()},
      {"cgroup_usage", cgroup ? nlohmann::json(cgroup->usage) : nlohmann::json()},
      {"cgroup_inactive_file", cgroup ? nlohmann::json(cgroup->inactive_file) : nlohmann::json()},
      {"cgroup_swap_limit", cgroup ? nlohmann::json(cgroup->swap_limit) : nlohmann::json()},
      {"budget_bytes", budget.bytes},
      {"need_bytes", plan.need(plan.zero_stage)},
      {"local_ranks", plan.local_ranks},
      {"world_size", plan.world_size},
      {"host_bytes_per_rank", plan.host_bytes_per_rank},
      {"model_params", plan.params},
      {"zero_stage", plan.params ? nlohmann::json(plan.zero_stage) : nlohmann::json()},
      {"tensor_parallel", plan.tp},
      {"pipeline_parallel", plan.pp},
      {"data_parallel", plan.divides() ? nlohmann::json(plan.dp()) : nlohmann::json()},
      {"model_state_savers",
       plan.params && plan.divides() ? nlohmann::json(plan.savers(plan.zero_stage)) : nlohmann::json()},
      {"formula", plan.formula()},
  };
}

Verdict run(const CheckContext& ctx) {
  const MemoryFacts& facts = ctx.facts.memory;
  const MemInfo* mem = facts.meminfo.value();
  if (mem == nullptr) {
    return unknown_from(facts.meminfo, "the node's available memory", kMeminfoUnreadable, kMeminfoHung);
  }
  const ProbeError* cgroup_error = facts.cgroup.error();
  if (cgroup_error != nullptr && cgroup_error->code != ProbeErrc::Unsupported) {
    return unknown_from(facts.cgroup, "the cgroup memory limit", kCgroupUnreadable, kCgroupHung);
  }

  const Budget budget = budget_of(*mem, facts.cgroup.value());
  const Plan plan = plan_of(ctx);
  if (!plan.divides()) {
    return Verdict::of(kLayoutUndivided,
                       {{"tp", plan.tp}, {"pp", plan.pp}, {"mp", plan.mp()}, {"world_size", plan.world_size}},
                       evidence_of(*mem, facts.cgroup.value(), budget, plan));
  }
  const std::uint64_t need = plan.need(plan.zero_stage);
  const nlohmann::json numbers = {{"budget", budget.text}, {"need", plan.text()}};
  const auto with = [&](nlohmann::json more) {
    nlohmann::json p = numbers;
    p.update(more);
    return p;
  };

  VerdictBuilder out;
  out.evidence() = evidence_of(*mem, facts.cgroup.value(), budget, plan);
  if (budget.bytes < need) {
    out.add(kTooLittle, with(fix_params(plan, budget)));
  } else if (static_cast<double>(budget.bytes - need) < kHeadroom * static_cast<double>(need)) {
    nlohmann::json p = with(fix_params(plan, budget));
    p["spare"] = format_bytes(budget.bytes - need);
    out.add(kLittleHeadroom, std::move(p));
  } else {
    out.add(kEnough, numbers);
  }
  if (static_cast<double>(mem->mem_available) < kLowAvailable * static_cast<double>(mem->mem_total)) {
    out.add(kRamHeldElsewhere,
            {{"available", format_bytes(mem->mem_available)}, {"total", format_bytes(mem->mem_total)}});
  }
  return out.build();
}

}  // namespace

extern const CheckSpec kHostMemory = {
    "host.memory",
    Scope::Node,
    "available RAM and cgroup memory limit vs the local ranks' peak (checkpoint saves included)",
    kExplain,
    kInNode | kInJob,
    "an image build's memory is not the job's: host memory is checked on the nodes that run it",
    &run,
    "memory",
    false,
    {},
    {},
    nullptr,
    kFindings,
};

}  // namespace host_memory_check
}  // namespace preflight
