// SPDX-License-Identifier: MIT
// topo.p2p: the GPU x GPU matrix as `nvidia-smi topo -m` prints it (NVLinks, else the PCIe path),
// NVML's P2P status per pair, the real peer copies of the contained helper (hung, crashed, failed,
// corrupted or slow copies, named by GPU pair), and NCCL_P2P_DISABLE / NCCL_P2P_LEVEL judged
// against that topology. Without the driver, the matrix comes from the hwloc topology alone.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/gpu_common.hpp"
#include "core/env_grammar.hpp"
#include "core/gpu_binding.hpp"
#include "core/pci_topology.hpp"
#include "core/text.hpp"

namespace preflight {
namespace topo_p2p_check {
namespace {

constexpr std::string_view kNeedsGpu = "the job needs a GPU";

constexpr char kLegend[] =
    "X = self; NV# = # bonded NVLinks; PIX = at most one PCIe bridge; PXB = several PCIe bridges; PHB = a PCIe "
    "host bridge (the CPU); NODE = between host bridges of one NUMA node; SYS = across NUMA nodes (QPI/UPI); "
    "! = this pair failed; * = this pair has a warning";

/// NCCL's path levels (ncclGetLevel: exact, case-sensitive strcmp) in order.
constexpr const char* kNcclLevels[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"};

/// The rank of an NCCL level string; legacy integers 0..5 (> 5 clamps to SYS); nullopt when NCCL
/// ignores the value.
std::optional<int> nccl_level(const std::string& value) {
  for (int i = 0; i < static_cast<int>(std::size(kNcclLevels)); ++i)
    if (value == kNcclLevels[i]) return i;
  if (!value.empty() && value[0] >= '0' && value[0] <= '9') {
    const std::int64_t n = nccl_int_value(value).value_or(0);
    static constexpr int kLegacy[] = {0, 4, 5, 8, 9, 9};  // LOC PIX PXB PHB SYS SYS
    return kLegacy[std::clamp<std::int64_t>(n, 0, 5)];
  }
  return std::nullopt;
}

/// The NCCL level a PCIe path label needs.
int level_of_path(const std::string& path) {
  if (path == "PIX") return 4;
  if (path == "PXB") return 5;
  if (path == "PHB") return 8;
  if (path == "NODE") return 8;  // NCCL folds NODE into PHB's side of the scale
  return 9;
}

bool poor_path(const std::string& path) { return path == "PHB" || path == "NODE" || path == "SYS"; }

/// The slowest a healthy peer copy is expected to be on this link (GB/s, unidirectional): NVLink
/// gives 20-25 GB/s per link, a PCIe Gen3 x16 switch path about 10, a path through the CPU less.
double floor_gbps(int nvlinks, const std::string& path) {
  if (nvlinks > 0) return std::max(10.0, 8.0 * nvlinks);
  if (path == "PIX" || path == "PXB") return 4.0;
  return 1.5;
}

std::string gbps_text(double v) { return fixed(v, v >= 100 ? 0 : 1); }

/// A GPU of the matrix, from NVML or from the topology.
struct Node {
  std::string bus;    // bus_key
  std::string shown;  // as the facts spell it
  std::string cpus = "N/A";
  std::string numa = "N/A";
  std::string nic = "N/A";
};

struct Cell {
  std::string label;  // NV18, PIX, ...
  bool failed = false;
  bool warned = false;
};

/// The first `n` items, then "and K more".
std::string first_of(const std::vector<std::string>& items, std::size_t n, std::string_view sep = "; ") {
  if (items.size() <= n) return join(items, sep);
  return join(std::vector<std::string>(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(n)), sep) + " and " +
         std::to_string(items.size() - n) + " more";
}

std::string gpu_name(const std::vector<Node>& nodes, std::size_t i) {
  return "GPU" + std::to_string(i) + " (" + nodes[i].shown + ")";
}

/// Locality columns from the topology, when it describes this machine's GPU.
void fill_from_topology(Node& n, const TopologyFacts* topo, bool cpus_from_nvml, bool numa_from_nvml) {
  if (topo == nullptr) return;
  const PciEndpoint* ep = find_endpoint(topo->gpus, n.bus);
  if (ep == nullptr) return;
  if (!cpus_from_nvml && !ep->local_cpus.empty()) n.cpus = cpu_list(ep->local_cpus);
  if (!numa_from_nvml && !ep->numa_nodes.empty()) {
    std::vector<std::string> parts;
    for (int x : ep->numa_nodes) parts.push_back(std::to_string(x));
    n.numa = join(parts, ",");
  }
  std::vector<std::string> nics;
  for (const NearNic& near : nearest_nics(*ep, topo->nics)) {
    const std::string name = near.nic->os_devices.empty() ? near.nic->bus_id : near.nic->os_devices.front();
    nics.push_back(name + " (" + near.path + ")");
  }
  if (!nics.empty()) n.nic = join(nics, ", ");
}

nlohmann::json make_table(const std::vector<Node>& nodes, const std::vector<std::vector<Cell>>& cells) {
  nlohmann::json table = nlohmann::json::array();
  nlohmann::json header = nlohmann::json::array({""});
  for (std::size_t i = 0; i < nodes.size(); ++i) header.push_back("GPU" + std::to_string(i));
  header.push_back("CPU Affinity");
  header.push_back("NUMA");
  header.push_back("Nearest NIC");
  table.push_back(header);
  for (std::size_t a = 0; a < nodes.size(); ++a) {
    nlohmann::json row = nlohmann::json::array({"GPU" + std::to_string(a)});
    for (std::size_t b = 0; b < nodes.size(); ++b) {
      const Cell& c = cells[a][b];
      row.push_back(c.label + (c.failed ? "!" : c.warned ? "*" : ""));
    }
    row.push_back(nodes[a].cpus);
    row.push_back(nodes[a].numa);
    row.push_back(nodes[a].nic);
    table.push_back(row);
  }
  return table;
}

constexpr FindingSpec kSingleGpu = {"topo.p2p/single-gpu", Status::Skip,
                                    "fewer than 2 GPUs ({gpus}{where}): no peer-to-peer path to check", ""};
constexpr FindingSpec kNoGpusInTopology = {"topo.p2p/no-gpus-in-topology", Status::Skip, "no GPUs in {source}", ""};
// The GPU checks' shared findings (no driver; the GPU list not read).
constexpr GpuSharedRows kShared = {PREFLIGHT_GPU_SHARED_FINDINGS("topo.p2p", "")};
constexpr FindingSpec kNvmlMissing = {"topo.p2p/nvml-missing", Status::Unknown,
                                      "NVML's view of the GPUs is missing: {why}",
                                      "See driver.loaded; the matrix below is hwloc's PCIe view only."};
constexpr FindingSpec kNvlinkP2pDisabled = {
    "topo.p2p/nvlink-p2p-disabled", Status::Fail,
    "P2P is disabled between NVLink-connected GPUs: {nvlink_pairs} — NCCL stops with \"P2P is disabled between NVLINK "
    "connected GPUs\"",
    "A hardware or fabric fault: check `nvidia-smi nvlink --status`, `nvidia-smi topo -p2p rw`, and on "
    "NVSwitch systems `systemctl status nvidia-fabricmanager` and `nvidia-smi -q | grep -i -A2 fabric`; "
    "reset the GPUs (`nvidia-smi -r`) or reboot. NCCL_IGNORE_DISABLED_P2P=1 lets NCCL run without P2P "
    "(much slower) while the node is repaired."};
constexpr FindingSpec kCopyFailed = {
    "topo.p2p/copy-failed", Status::Fail, "{failed_copies}",
    "Look for the cause on this node: `sudo dmesg | grep -i -e xid -e nvrm -e iommu -e dmar` (Xid errors, IOMMU "
    "faults), `nvidia-smi topo -m` and `nvidia-smi topo -p2p rw`; PCIe ACS on a switch between the GPUs or an "
    "IOMMU in translated mode redirects peer traffic through the root complex and can hang or corrupt it (see "
    "topo.pcie_acs; `iommu=pt` on the kernel command line, ACS disabled on the PCIe switches). Until fixed, run "
    "jobs with `NCCL_P2P_DISABLE=1` (slower, correct) or drain the node: `scontrol update "
    "nodename=$(hostname -s) state=drain reason=\"GPU peer copy failed\"`."};
constexpr FindingSpec kCopySlow = {
    "topo.p2p/copy-slow", Status::Warn, "peer copies much slower than the link allows: {slow_copies}",
    "A degraded link: check `nvidia-smi nvlink --status` / `nvidia-smi -q | grep -A3 'Link Width'` (a "
    "GPU trained at a lower PCIe width or generation), and PCIe ACS / IOMMU redirecting peer traffic "
    "(topo.pcie_acs). Measure with nccl-tests `all_reduce_perf -b 64M -e 1G -g <gpus>`."};
constexpr FindingSpec kCopiesNotRun = {
    "topo.p2p/copies-not-run", Status::Unknown, "the peer copies could not be run: {why}",
    "See cuda.smoke and driver.loaded for the driver's state, then rerun preflight."};
constexpr FindingSpec kPairsUncopied = {
    "topo.p2p/pairs-uncopied", Status::Unknown,
    "{uncopied_count} pair(s) of the job's {job_gpus} GPUs claim P2P but their peer copies did not run: "
    "{uncopied_pairs} — {reason}",
    "Rerun preflight so its helper sees every GPU the job uses (it runs the copies across the union of "
    "the node's ranks' CUDA_VISIBLE_DEVICES); until a copy has run on these pairs their P2P is unverified."};
constexpr FindingSpec kP2pDisabledOnNvlink = {
    "topo.p2p/p2p-disabled-on-nvlink", Status::Warn,
    "NCCL_P2P_DISABLE={disable} turns P2P off between NVLink-connected GPUs: NCCL then moves intra-node traffic "
    "through host memory (several times slower)",
    "Unless it works around a known fault on this node, `unset NCCL_P2P_DISABLE`."};
constexpr FindingSpec kDisableIgnored = {
    "topo.p2p/disable-ignored", Status::Warn,
    "NCCL_P2P_DISABLE={disable} is ignored by NCCL (it reads an integer and only 1 disables)",
    "To disable P2P: `export NCCL_P2P_DISABLE=1`; otherwise `unset NCCL_P2P_DISABLE`."};
constexpr FindingSpec kLevelWrongCase = {
    "topo.p2p/level-wrong-case", Status::Warn,
    "NCCL_P2P_LEVEL={level} is ignored by NCCL (level names are case-sensitive; it keeps the default PXB)",
    "`export NCCL_P2P_LEVEL={upper}` (or unset it)."};
constexpr FindingSpec kLevelUnknown = {
    "topo.p2p/level-unknown", Status::Warn,
    "NCCL_P2P_LEVEL={level} is ignored by NCCL (not a level name; it keeps the default PXB)",
    "Use one of LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS (exact case), or `unset NCCL_P2P_LEVEL`."};
constexpr FindingSpec kLevelRefused = {
    "topo.p2p/level-refused", Status::Warn,
    "NCCL_P2P_LEVEL={level} asks for P2P where NVML reports it unsupported: {refused_pairs} — NCCL also requires "
    "NVML's P2P status OK, so it will not use P2P there",
    "`unset NCCL_P2P_LEVEL` (it changes nothing on these pairs); P2P across them needs a platform that "
    "supports it (chipset/topology not supported is a property of the CPU/PCIe root, not a setting)."};
constexpr FindingSpec kPcieThroughCpu = {
    "topo.p2p/pcie-through-cpu", Status::Warn,
    "{poor_count} GPU pair{plural} without NVLink cross {poor_paths}: {poor_pairs} — NCCL's default NCCL_P2P_LEVEL "
    "is PXB, so it does not use P2P there and stages through host memory{topology_note}",
    "Usually nothing to do: place communicating ranks on GPUs under one PCIe switch. Only if a measurement "
    "(nccl-tests `all_reduce_perf`) shows P2P faster across that path, set `export NCCL_P2P_LEVEL=SYS` for "
    "the job."};
constexpr FindingSpec kPathsChecked = {"topo.p2p/paths-checked", Status::Pass, "{gpu_count} GPUs, {paths}{detail}", ""};

constexpr FindingSpec kFactsUnreadable = {"topo.p2p/facts-unreadable", Status::Unknown, kUnreadableMessage,
                                          kUnreadableFix};
constexpr FindingSpec kFactsHung = {"topo.p2p/facts-hung", Status::Unknown, kHungMessage, kHungProbeRemedy};

constexpr FindingSpec kGpuLost = {"topo.p2p/gpu-lost", Status::Fail, kLostGpuMessage, kLostGpuRemedy};
constexpr FindingSpec kPairsUnread = {"topo.p2p/pairs-unread", Status::Unknown,
                                      "NVML could not read {unread_pairs}; the other pairs are judged",
                                      kGpuReadErrorFix};

constexpr auto kFindings =
    with_shared(kShared, std::array{kFactsUnreadable, kFactsHung, kSingleGpu, kNoGpusInTopology, kNvmlMissing, kGpuLost,
                                    kNvlinkP2pDisabled, kCopyFailed, kCopySlow, kCopiesNotRun, kPairsUncopied,
                                    kPairsUnread, kP2pDisabledOnNvlink, kDisableIgnored, kLevelWrongCase, kLevelUnknown,
                                    kLevelRefused, kPcieThroughCpu, kPathsChecked});

Verdict run(const CheckContext& ctx) {
  const RankFacts& f = ctx.facts;
  const DriverFacts& d = f.gpu.driver;
  const TopologyFacts* topo = f.topology.value();
  const bool foreign_topology = topo != nullptr && !topo->this_system;
  const std::vector<NvmlGpu>* nvml = d.nvml_gpus.value();
  const std::vector<GpuPair>* pairs = d.gpu_pairs.value();

  VerdictBuilder b;
  std::vector<std::string> notes;  // PASS-level remarks, after the summary
  std::vector<Node> nodes;
  std::vector<std::vector<Cell>> cells;
  std::string source;
  // Per pair (a < b, matrix indices): NVLinks, PCIe path, NVML P2P read/write.
  struct PairInfo {
    int nvlinks = 0;
    std::string path, read, write;
  };
  std::map<std::pair<std::size_t, std::size_t>, PairInfo> info;

  const bool use_driver = !foreign_topology && nvml != nullptr;
  if (use_driver) {
    if (nvml->size() < 2) return Verdict::of(kSingleGpu, {{"gpus", nvml->size()}, {"where", part_if(false, "")}});
    if (pairs == nullptr) return unknown_from(d.gpu_pairs, "NVML's GPU pair matrix", kFactsUnreadable, kFactsHung);
    source = "NVML (" + std::to_string(nvml->size()) + " GPUs)";
    const TopologyFacts* local_topo = topo != nullptr && topo->this_system ? topo : nullptr;
    for (const NvmlGpu& g : *nvml) {
      Node n;
      n.bus = bus_key(g.pci_bus_id);
      n.shown = g.pci_bus_id;
      if (!g.cpu_affinity.empty()) n.cpus = cpu_list(g.cpu_affinity);
      if (g.numa_node) n.numa = std::to_string(*g.numa_node);
      fill_from_topology(n, local_topo, !g.cpu_affinity.empty(), g.numa_node.has_value());
      nodes.push_back(n);
    }
    cells.assign(nodes.size(), std::vector<Cell>(nodes.size()));
    for (std::size_t i = 0; i < nodes.size(); ++i) cells[i][i].label = "X";
    auto pos = [&](int index) -> std::optional<std::size_t> {
      for (std::size_t i = 0; i < nvml->size(); ++i)
        if ((*nvml)[i].index == index) return i;
      return std::nullopt;
    };
    // A lost GPU is named with its cause and its pairs are not judged; a pair NVML could not read is
    // named with the error; every other pair is judged.
    if (const std::vector<std::string> lost = lost_nvml_gpus(*nvml); !lost.empty())
      b.add(kGpuLost, {{"gpus", join(lost, "; ")}});
    std::vector<std::string> unread_pairs;
    for (const GpuPair& p : *pairs) {
      const auto a = pos(p.a), c = pos(p.b);
      if (!a || !c || *a == *c) continue;
      if (!p.error.empty()) {
        const bool lost_pair = !(*nvml)[*a].lost.empty() || !(*nvml)[*c].lost.empty();
        if (lost_pair) {
          cells[*a][*c].failed = cells[*c][*a].failed = true;
        } else {
          unread_pairs.push_back("GPUs " + std::to_string(p.a) + " and " + std::to_string(p.b) + ": " + p.error);
        }
        continue;
      }
      const std::string label = p.nvlinks > 0 ? "NV" + std::to_string(p.nvlinks) : (p.path.empty() ? "?" : p.path);
      cells[*a][*c].label = cells[*c][*a].label = label;
      info[{std::min(*a, *c), std::max(*a, *c)}] = {p.nvlinks, p.path, p.p2p_read, p.p2p_write};
    }
    if (!unread_pairs.empty()) b.add(kPairsUnread, {{"unread_pairs", first_of(unread_pairs, 4)}});
    for (std::size_t a = 0; a < nodes.size(); ++a)
      for (std::size_t c = 0; c < nodes.size(); ++c)
        if (cells[a][c].label.empty()) cells[a][c].label = "?";
  } else if (topo != nullptr && !topo->gpus.empty()) {
    if (topo->gpus.size() < 2) {
      return Verdict::of(
          kSingleGpu,
          {{"gpus", topo->gpus.size()}, {"where", template_param(" in {source}")}, {"source", topo->source}});
    }
    source = topo->source + " (" + std::to_string(topo->gpus.size()) + " GPUs, " +
             (topo->nvlinks.empty() ? "PCIe paths only)" : "PCIe paths and recorded NVLinks)");
    if (topo->this_system) {
      if (std::optional<GpuShared> none = no_driver(d, kNeedsGpu)) {
        add_shared(b, kShared, *none);
      } else if (nvml == nullptr) {
        b.add(kNvmlMissing, {{"why", d.nvml_gpus.why()}});
      }
    }
    for (const PciEndpoint& g : topo->gpus) {
      Node n;
      n.bus = bus_key(g.bus_id);
      n.shown = g.bus_id;
      fill_from_topology(n, topo, false, false);
      nodes.push_back(n);
    }
    cells.assign(nodes.size(), std::vector<Cell>(nodes.size()));
    // NVLinks recorded in the topology (hwloc's NVLinkBandwidth matrix): a direct GPU-GPU link, or
    // both GPUs linked to NVSwitches (all GPUs on the switches reach each other).
    auto link_bw = [&](const std::string& a, const std::string& c) {
      std::uint64_t bw = 0;
      for (const TopoLink& l : topo->nvlinks)
        if ((l.a == a && l.b == c) || (l.a == c && l.b == a)) bw = std::max(bw, l.bandwidth);
      return bw;
    };
    auto switch_bw = [&](const std::string& a) {
      std::uint64_t bw = 0;
      for (const TopoLink& l : topo->nvlinks)
        if (l.a == a && l.b_kind == "nvswitch") bw += l.bandwidth;
      return bw;
    };
    for (std::size_t a = 0; a < nodes.size(); ++a) {
      for (std::size_t c = 0; c < nodes.size(); ++c) {
        const PciEndpoint& ga = topo->gpus[a];
        const PciEndpoint& gc = topo->gpus[c];
        const std::string pcie = path_class(ga, gc);
        const bool nvlink =
            a != c && (link_bw(ga.bus_id, gc.bus_id) > 0 || (switch_bw(ga.bus_id) > 0 && switch_bw(gc.bus_id) > 0));
        cells[a][c].label = nvlink ? "NV" : pcie;
        if (a < c) info[{a, c}] = {nvlink ? 1 : 0, pcie, "", ""};
      }
    }
    if (!topo->nvlinks.empty()) {
      source += "; \"NV\": joined by NVLink in the topology's NVLinkBandwidth matrix (link count not recorded)";
    }
  } else if (nvml == nullptr) {
    // No matrix from anywhere: no driver (FAIL, as every GPU check), or NVML failed.
    if (std::optional<GpuShared> none = no_driver(d, kNeedsGpu)) return shared_verdict(kShared, *none);
    const ProbeError& err = *d.nvml_gpus.error();
    return shared_verdict(kShared,
                          missing_gpu_fact(err, d.nvml_gpus.source(), "the GPUs and their pairs (NVML)", kNeedsGpu));
  } else {
    return Verdict::of(kNoGpusInTopology, {{"source", topo->source}});
  }

  const bool has_nvlink = std::any_of(info.begin(), info.end(), [](const auto& kv) { return kv.second.nvlinks > 0; });
  auto find_node = [&](const std::string& bus) -> std::optional<std::size_t> {
    const std::string key = bus_key(bus);
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].bus == key) return i;
    return std::nullopt;
  };
  auto pair_of = [&](std::size_t a, std::size_t c) -> const PairInfo* {
    auto it = info.find({std::min(a, c), std::max(a, c)});
    return it == info.end() ? nullptr : &it->second;
  };
  auto mark = [&](std::size_t a, std::size_t c, bool failed) {
    (failed ? cells[a][c].failed : cells[a][c].warned) = true;
    (failed ? cells[c][a].failed : cells[c][a].warned) = true;
  };

  // 1. NVLink-connected GPUs whose P2P NVML reports off: NCCL refuses to run.
  if (use_driver) {
    std::vector<std::string> broken;
    for (const auto& [ab, p] : info) {
      if (p.nvlinks == 0) continue;
      const bool read_bad = !p.read.empty() && p.read != "OK";
      const bool write_bad = !p.write.empty() && p.write != "OK";
      if (!read_bad && !write_bad) continue;
      broken.push_back(gpu_name(nodes, ab.first) + " and " + gpu_name(nodes, ab.second) + " (NV" +
                       std::to_string(p.nvlinks) + ", P2P read " + (p.read.empty() ? "?" : p.read) + ", write " +
                       (p.write.empty() ? "?" : p.write) + ")");
      mark(ab.first, ab.second, true);
    }
    if (!broken.empty()) b.add(kNvlinkP2pDisabled, {{"nvlink_pairs", first_of(broken, 4)}});
  }

  // 2. The real peer copies.
  double min_gbps = -1;
  std::size_t verified = 0, no_access = 0;
  nlohmann::json copies_evidence = nlohmann::json::array();
  if (use_driver) {
    if (const std::vector<PeerCopy>* copies = d.peer_copies.value()) {
      std::vector<std::string> failed, slow;
      for (const PeerCopy& c : *copies) {
        copies_evidence.push_back(c);
        if (!c.can_access) {
          ++no_access;
          continue;
        }
        const auto s = find_node(c.src_bus_id), t = find_node(c.dst_bus_id);
        const std::string what = "GPU" + std::to_string(c.src) + " (" + c.src_bus_id + ") -> GPU" +
                                 std::to_string(c.dst) + " (" + c.dst_bus_id + ")";
        if (!c.ok) {
          failed.push_back("peer copy " + what + " failed at " + (c.failed_step.empty() ? "?" : c.failed_step) + ": " +
                           c.error);
          if (s && t) mark(*s, *t, true);
          continue;
        }
        ++verified;
        min_gbps = min_gbps < 0 ? c.gbps : std::min(min_gbps, c.gbps);
        if (s && t) {
          if (const PairInfo* p = pair_of(*s, *t)) {
            const double floor = floor_gbps(p->nvlinks, p->path);
            if (c.gbps > 0 && c.gbps < floor) {
              slow.push_back(what + " " + gbps_text(c.gbps) + " GB/s over " +
                             (p->nvlinks > 0 ? "NV" + std::to_string(p->nvlinks) : p->path) + " (expected at least " +
                             gbps_text(floor) + ")");
              mark(*s, *t, false);
            }
          }
        }
      }
      if (!failed.empty()) b.add(kCopyFailed, {{"failed_copies", first_of(failed, 4)}});
      if (!slow.empty()) b.add(kCopySlow, {{"slow_copies", first_of(slow, 4)}});
    } else {
      const ProbeError& e = *d.peer_copies.error();
      if (e.code == ProbeErrc::Unsupported) {
        notes.push_back("peer copies not run: " + e.detail);
      } else {
        b.add(kCopiesNotRun, {{"why", d.peer_copies.why()}});
      }
    }
    // Every pair of the job's GPUs (the union of what the node's ranks see) that NVML says can do
    // P2P must have had its real copy: a check whose real test did not run is never PASS.
    const std::optional<std::vector<BoundGpu>> job_gpus = union_visible(node_ranks(ctx));
    auto in_job = [&](std::size_t i) {
      if (!job_gpus) return true;
      return std::any_of(job_gpus->begin(), job_gpus->end(), [&](const BoundGpu& g) {
        const NvmlGpu& n = (*nvml)[i];
        return (!g.uuid.empty() && !n.uuid.empty()) ? uuid_key(g.uuid) == uuid_key(n.uuid)
                                                    : !g.bus.empty() && bus_key(g.bus) == nodes[i].bus;
      });
    };
    const std::vector<PeerCopy>* copies = d.peer_copies.value();
    auto copied = [&](std::size_t a, std::size_t c) {
      if (copies == nullptr) return false;
      return std::any_of(copies->begin(), copies->end(), [&](const PeerCopy& pc) {
        const std::string s1 = bus_key(pc.src_bus_id), s2 = bus_key(pc.dst_bus_id);
        return (s1 == nodes[a].bus && s2 == nodes[c].bus) || (s1 == nodes[c].bus && s2 == nodes[a].bus);
      });
    };
    std::vector<std::string> uncovered;
    std::size_t job_count = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) job_count += in_job(i) ? 1 : 0;
    for (const auto& [ab, p] : info) {
      const bool claimed = p.read == "OK" || p.write == "OK";
      if (!claimed || !in_job(ab.first) || !in_job(ab.second) || copied(ab.first, ab.second)) continue;
      uncovered.push_back(gpu_name(nodes, ab.first) + "–" + gpu_name(nodes, ab.second));
    }
    b.evidence()["job_gpus"] = job_count;
    if (!uncovered.empty()) {
      const std::string why = copies != nullptr
                                  ? "the helper did not copy between them (" + d.peer_copies.source() + ")"
                                  : d.peer_copies.why();
      b.add(kPairsUncopied, {{"uncopied_count", uncovered.size()},
                             {"job_gpus", job_count},
                             {"uncopied_pairs", first_of(uncovered, 4)},
                             {"reason", why}});
    }
  }

  // 3. NCCL's settings against the paths.
  const std::optional<std::string> disable = f.env.get("NCCL_P2P_DISABLE");
  const std::optional<std::string> level = f.env.get("NCCL_P2P_LEVEL");
  bool p2p_disabled = false;
  if (disable) {
    const std::string v(trim(*disable));
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(v.c_str(), &end, 0);
    if (end != v.c_str() && n == 1) {
      p2p_disabled = true;
      if (has_nvlink) {
        b.add(kP2pDisabledOnNvlink, {{"disable", *disable}});
      } else {
        notes.push_back("NCCL_P2P_DISABLE=" + *disable + ": NCCL uses no P2P between the GPUs");
      }
    } else if (end != v.c_str()) {
      notes.push_back("NCCL_P2P_DISABLE=" + *disable + ": P2P stays enabled (only 1 disables)");
    } else {
      b.add(kDisableIgnored, {{"disable", printable(*disable)}});
    }
  }
  std::optional<int> forced;
  if (level) {
    forced = nccl_level(*level);
    if (!forced) {
      const std::string upper = [&] {
        std::string u = *level;
        for (char& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        return u;
      }();
      if (nccl_level(upper).has_value()) {
        b.add(kLevelWrongCase, {{"level", printable(*level)}, {"upper", upper}});
      } else {
        b.add(kLevelUnknown, {{"level", printable(*level)}});
      }
    } else if (p2p_disabled) {
      notes.push_back("NCCL_P2P_LEVEL=" + *level + " has no effect while NCCL_P2P_DISABLE=1");
    }
  }

  // 4. PCIe paths NCCL will not use for P2P, and NVML statuses that forbid it.
  std::vector<std::string> poor, refused;
  std::set<std::string> poor_classes;
  for (const auto& [ab, p] : info) {
    if (p.nvlinks > 0) continue;
    const bool nvml_refuses = (!p.read.empty() && p.read != "OK") || (!p.write.empty() && p.write != "OK");
    const std::string pair = "GPU" + std::to_string(ab.first) + "-GPU" + std::to_string(ab.second);
    if (nvml_refuses && forced && *forced >= level_of_path(p.path) && !p2p_disabled) {
      refused.push_back(pair + " (" + p.path + ", P2P read " + p.read + ", write " + p.write + ")");
      mark(ab.first, ab.second, false);
    } else if (poor_path(p.path) && !p2p_disabled) {
      const bool allowed = forced && *forced >= level_of_path(p.path);
      if (!allowed) {
        poor.push_back(pair + " " + p.path);
        poor_classes.insert(p.path);
        mark(ab.first, ab.second, false);
      }
    }
  }
  if (!refused.empty()) b.add(kLevelRefused, {{"level", *level}, {"refused_pairs", first_of(refused, 4)}});
  if (!poor.empty()) {
    const nlohmann::json why =
        part_if(!use_driver && (topo == nullptr || topo->nvlinks.empty()),
                " (from the PCIe topology alone: NVLinks, if any, are not visible without the driver)");
    b.add(kPcieThroughCpu,
          {{"poor_count", poor.size()},
           {"plural", poor.size() == 1 ? "" : "s"},
           {"poor_paths", join(std::vector<std::string>(poor_classes.begin(), poor_classes.end()), "/")},
           {"poor_pairs", first_of(poor, 6, ", ")},
           {"topology_note", why}});
  }

  // Evidence and the summary.
  b.evidence()["source"] = source;
  b.evidence()["table"] = make_table(nodes, cells);
  b.evidence()["table_legend"] = kLegend;
  nlohmann::json pe = nlohmann::json::array();
  for (const auto& [ab, p] : info)
    pe.push_back({{"a", ab.first},
                  {"b", ab.second},
                  {"nvlinks", p.nvlinks},
                  {"path", p.path},
                  {"p2p_read", p.read},
                  {"p2p_write", p.write}});
  b.evidence()["pairs"] = std::move(pe);
  if (use_driver) b.evidence()["peer_copies"] = std::move(copies_evidence);

  if (b.status() == Status::Pass) {
    std::set<std::string> labels;
    for (std::size_t a = 0; a < nodes.size(); ++a)
      for (std::size_t c = 0; c < nodes.size(); ++c)
        if (a != c) labels.insert(cells[a][c].label);
    const std::string paths = labels.size() == 1
                                  ? "all pairs " + *labels.begin()
                                  : "paths " + join(std::vector<std::string>(labels.begin(), labels.end()), "/");
    nlohmann::json params = {{"gpu_count", nodes.size()}, {"paths", paths}};
    std::string detail;
    if (use_driver) {
      if (verified > 0) {
        detail += "; {verified} peer copies verified (min {min_gbps} GB/s)";
        params["verified"] = verified;
        params["min_gbps"] = gbps_text(min_gbps);
      }
      if (no_access > 0) {
        detail += "; {no_access} ordered pairs without peer access (not copied)";
        params["no_access"] = no_access;
      }
    } else {
      detail = " from {source}";
      params["source"] = source;
    }
    params["detail"] = template_param(detail);
    b.add(kPathsChecked, std::move(params));
  }
  for (std::string& n : notes) b.note(std::move(n));
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  From the contained GPU helper (NVML): per GPU its CPU affinity, NUMA node and NVLinks (the remote
  end of every active link); per pair of GPUs the PCIe path (nvmlDeviceGetTopologyCommonAncestor,
  shown as nvidia-smi does: PIX, PXB, PHB, NODE, SYS), the NVLinks joining them (directly or
  through NVSwitches, shown NV#) and NVML's P2P status for read, write and NVLink. Then the helper's
  real peer copies: for every ordered pair of CUDA devices with cuDeviceCanAccessPeer, 64 MiB copied
  with peer access enabled (cuMemcpyPeerAsync, polled against a deadline, never waited on), head,
  middle and tail verified on the destination, the bandwidth from CUDA events. The helper reports
  each copy as it goes, so a copy that hangs or crashes the helper is still named. The environment's
  NCCL_P2P_DISABLE and NCCL_P2P_LEVEL. With no driver, or with --topology-xml (another node's
  topology: this machine's NVML facts are then not mixed in), the matrix comes from the hwloc
  topology's PCIe paths alone. The evidence holds the matrix as `nvidia-smi topo -m` prints it, with
  CPU affinity, NUMA node and nearest NIC per GPU.

Failures
  FAIL     a real peer copy hung (did not finish within its deadline), crashed the helper, returned
           an error, or delivered wrong data ("word 17 is 0xA5FEFD5A, wrote 0x5A0102A5"), named by
           GPU pair, bus ids and step: NCCL would hang or corrupt data on this pair.
  FAIL     GPUs joined by NVLink for which NVML reports P2P not OK: NCCL aborts with "P2P is disabled
           between NVLINK connected GPUs".
  WARN     GPU pairs without NVLink whose path is PHB, NODE or SYS: NCCL's default NCCL_P2P_LEVEL is
           PXB, so it does not use P2P there (traffic is staged through host memory).
  WARN     NCCL_P2P_LEVEL asks for P2P on pairs where NVML reports it unsupported (CNS, GNS, TNS):
           NCCL also gates on NVML's status, the setting changes nothing.
  WARN     a verified copy far slower than the link allows (NVLink: 8 GB/s per link, at least 10;
           PIX/PXB: 4 GB/s; through the CPU: 1.5 GB/s): a degraded link or redirected traffic.
  WARN     NCCL_P2P_DISABLE set to anything NCCL ignores (only the integer 1 disables: "true", "yes"
           do nothing), NCCL_P2P_DISABLE=1 on NVLink-connected GPUs (everything through host memory),
           or NCCL_P2P_LEVEL not one of LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS (exact case) or a
           legacy integer 0-5: NCCL silently keeps its default.
  FAIL     no driver on this node (neither libnvidia-ml.so.1 nor libcuda.so.1 loads), or the helper
           crashed, hung or NVML returned an error listing the GPUs: the job needs a GPU. With this
           machine's hwloc topology the PCIe matrix is still shown. (A --topology-xml of another node
           is judged on its own, without this machine's driver.)
  FAIL     a GPU is lost or needs a reset (NVML_ERROR_GPU_IS_LOST / RESET_REQUIRED), named with
           its bus id and the call; its pairs are marked and not judged, every other pair is.
  UNKNOWN  the matrix could not be gathered (NVML's list or pair matrix not read), or the peer
           copies could not be run; NVML answered an error for a pair of GPUs (named, with the
           call): that pair is not judged, the others are.
  UNKNOWN  pairs of the job's GPUs that NVML says can do P2P had no real peer copy (the helper saw
           fewer GPUs, or was not run): never PASS on a test that did not run. The job's GPUs are the
           union of what the node's ranks see; in a job the node's local rank 0 runs the copies with
           CUDA_VISIBLE_DEVICES set to that union, whatever its own value is.
  SKIP     fewer than 2 GPUs; in the image profile (no topology).

Fix
  Failed copies: `sudo dmesg | grep -i -e xid -e iommu`, `nvidia-smi topo -m`, `nvidia-smi topo
  -p2p rw`; PCIe ACS on the switches or an IOMMU in translated mode (topo.pcie_acs; `iommu=pt`);
  meanwhile `NCCL_P2P_DISABLE=1` or drain the node. NVLink P2P disabled: `nvidia-smi nvlink
  --status`, the fabric manager (`systemctl status nvidia-fabricmanager`), a GPU reset or reboot.
  PCIe paths through the CPU: nothing, or `NCCL_P2P_LEVEL=SYS` only if nccl-tests shows it faster.
  Ignored settings: `export NCCL_P2P_DISABLE=1` / `export NCCL_P2P_LEVEL=SYS` exactly, or unset them.)EXPLAIN";

}  // namespace

extern const CheckSpec kTopoP2p = {"topo.p2p",
                                   Scope::Node,
                                   "GPU peer-to-peer paths carry real copies; NCCL_P2P settings fit the topology",
                                   kExplain,
                                   kInNode | kInJob,
                                   "an image build has no topology",
                                   &run,
                                   "gpu_p2p,topology,gpu_driver",
                                   true,
                                   "driver.loaded",
                                   {},
                                   nullptr,
                                   kFindings};

}  // namespace topo_p2p_check
}  // namespace preflight
