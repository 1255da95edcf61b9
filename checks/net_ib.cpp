// SPDX-License-Identifier: MIT
// net.ib: the RDMA devices and ports NCCL's IB transport will use, with NCCL_IB_HCA evaluated as
// NCCL evaluates it, and NCCL_IB_DISABLE set while ACTIVE HCAs exist.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "core/env_grammar.hpp"
#include "core/nccl_names.hpp"
#include "core/nccl_socket.hpp"
#include "core/text.hpp"

namespace preflight {
namespace net_ib_check {
namespace {

struct PortRef {
  const IbDevice* dev;
  const IbPort* port;
  std::string name() const { return dev->name + ":" + std::to_string(port->port); }
};

// "4: ACTIVE" -> 4; nullopt when unreadable or malformed.
std::optional<int> state_number(std::string_view state) {
  const std::size_t colon = state.find(':');
  const auto v = parse_int(trim(state.substr(0, colon)));
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

bool usable_link(const IbPort& p) { return p.link_layer == "InfiniBand" || p.link_layer == "Ethernet"; }

std::string link_word(const IbPort& p) {
  return p.link_layer == "Ethernet" ? "RoCE" : p.link_layer.empty() ? "unknown link layer" : p.link_layer;
}

// "400 Gb/sec (4X NDR)" -> 400.
std::optional<double> rate_gbps(std::string_view rate) {
  const std::vector<std::string_view> cols = split_ws(rate);
  if (cols.empty()) return std::nullopt;
  const std::string num(cols[0]);
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (end == num.c_str() || *end != '\0') return std::nullopt;
  return v;
}

std::string port_text(const PortRef& r) {
  return r.name() + " (" + (r.port->state.empty() ? std::string("state unknown") : r.port->state) +
         (r.port->phys_state.empty() ? std::string() : ", " + r.port->phys_state) + ", " + link_word(*r.port) +
         (r.port->rate.empty() ? std::string() : ", " + r.port->rate) + ")";
}

std::string exact_form(std::string_view value) {
  const bool exclude = !value.empty() && value.front() == '^';
  if (exclude) value.remove_prefix(1);
  return std::string(exclude ? "^" : "") + "=" + std::string(value);
}

#define PREFLIGHT_PORTS_UP "(`ibstat`; check cables, the subnet manager for InfiniBand, the switch port for RoCE)"

constexpr FindingSpec kNoDevices = {"net.ib/no-devices", Status::Skip,
                                    "no RDMA devices{where}; NCCL uses TCP sockets (NET/Socket) between nodes", ""};
constexpr FindingSpec kIbDisabled = {
    "net.ib/ib-disabled", Status::Warn,
    "NCCL_IB_DISABLE={value} ({origin}) while {active} RDMA port(s) are ACTIVE ({active_ports}): NCCL falls back to "
    "TCP sockets (NET/Socket), many times slower between nodes",
    "Unset it (`unset NCCL_IB_DISABLE`) and remove it from NCCL's configuration files, unless the RDMA fabric is known "
    "broken."};
constexpr FindingSpec kPrefixTrap = {"net.ib/prefix-trap", Status::Warn, "NCCL_IB_HCA={hca} matches by prefix: {traps}",
                                     "Name the devices exactly: `export NCCL_IB_HCA={exact}`."};
constexpr FindingSpec kUnknownDevice = {
    "net.ib/unknown-device", Status::Fail,
    "NCCL_IB_HCA names {entry}, which matches no RDMA device (devices: {devices})",
    "Name devices that exist (`ls /sys/class/infiniband`, `ibv_devinfo -l`), e.g. `export "
    "NCCL_IB_HCA=={device_list}`."};
constexpr FindingSpec kUnknownPort = {"net.ib/unknown-port", Status::Fail,
                                      "NCCL_IB_HCA names {entry}, a port the device does not have",
                                      "Name an existing port (`ls /sys/class/infiniband/{device}/ports`), usually :1."};
constexpr FindingSpec kStateUnreadable = {"net.ib/state-unreadable", Status::Unknown,
                                          "the state of {unreadable} could not be read",
                                          "Run preflight where /sys/class/infiniband/*/ports/*/state is readable."};
#define PREFLIGHT_NO_ACTIVE_SELECTED \
  "{selected_by} selects no ACTIVE port{down_note}; NCCL finds no IB device and falls back to TCP sockets"
constexpr FindingSpec kHcaMissesActive = {
    "net.ib/hca-misses-active", Status::Fail, PREFLIGHT_NO_ACTIVE_SELECTED,
    "Select ACTIVE ports: {active_ports} (e.g. `export NCCL_IB_HCA=={first_active}`)."};
constexpr FindingSpec kHcaNoneActive = {"net.ib/hca-none-active", Status::Fail, PREFLIGHT_NO_ACTIVE_SELECTED,
                                        "Bring the RDMA ports up " PREFLIGHT_PORTS_UP "."};
#undef PREFLIGHT_NO_ACTIVE_SELECTED
constexpr FindingSpec kNoneActive = {
    "net.ib/none-active", Status::Warn,
    "no RDMA port is ACTIVE ({down_ports}): NCCL falls back to TCP sockets between nodes",
    "Bring the ports up " PREFLIGHT_PORTS_UP ", or ignore if this node does not use RDMA."};
constexpr FindingSpec kSomeInactive = {
    "net.ib/some-inactive", Status::Warn,
    "{selected_by} also selects ports that are not ACTIVE: {down_ports} (NCCL skips them)",
    "Bring them up (`ibstat`), or leave them out: `export NCCL_IB_HCA=={used_ports}`."};
constexpr FindingSpec kMixedLinkLayers = {
    "net.ib/mixed-link-layers", Status::Warn,
    "the ports NCCL will use mix link layers ({per_port}): NCCL errors when it merges them (\"Try selecting NICs of "
    "only one link type using NCCL_IB_HCA\")",
    "Select one link type with NCCL_IB_HCA, e.g. only the InfiniBand ports."};
constexpr FindingSpec kMixedRates = {
    "net.ib/mixed-rates", Status::Warn,
    "the ports NCCL will use have different rates ({port_rates}): the slowest one bounds every ring through it",
    "Check the slow ports' cables and negotiated speed (`ibstat`), or leave them out of NCCL_IB_HCA."};
constexpr FindingSpec kPorts = {"net.ib/ports", Status::Pass,
                                "{selected_by} will use {count} ACTIVE port(s): {ports} ({link}{rate}); {gdr}", ""};
#undef PREFLIGHT_PORTS_UP

constexpr FindingSpec kFactsUnreadable = {"net.ib/facts-unreadable", Status::Unknown, kUnreadableMessage,
                                          kUnreadableFix};
constexpr FindingSpec kFactsHung = {"net.ib/facts-hung", Status::Unknown, kHungMessage, kHungProbeRemedy};

constexpr std::array kFindings = {kFactsUnreadable, kFactsHung,    kNoDevices,       kIbDisabled,      kPrefixTrap,
                                  kUnknownDevice,   kUnknownPort,  kStateUnreadable, kHcaMissesActive, kHcaNoneActive,
                                  kNoneActive,      kSomeInactive, kMixedLinkLayers, kMixedRates,      kPorts};

Verdict run(const CheckContext& ctx) {
  const RankFacts& f = ctx.facts;
  VerdictBuilder b;
  nlohmann::json& ev = b.evidence();
  ev["gpudirect_rdma"] = f.net.gpudirect_rdma.ok() ? nlohmann::json(*f.net.gpudirect_rdma.value())
                                                   : nlohmann::json(f.net.gpudirect_rdma.why());
  ev["gpudirect_rdma_source"] = f.net.gpudirect_rdma.source();

  const std::vector<IbDevice>* devs = f.net.ib_devices.value();
  if (devs == nullptr) {
    const ProbeError& err = *f.net.ib_devices.error();
    if (err.code == ProbeErrc::NotFound) {
      return Verdict::of(kNoDevices, {{"where", template_param(" ({why})")}, {"why", f.net.ib_devices.why()}}, ev);
    }
    return unknown_from(f.net.ib_devices, "the RDMA devices (/sys/class/infiniband)", kFactsUnreadable, kFactsHung, ev);
  }
  if (devs->empty()) return Verdict::of(kNoDevices, {{"where", template_param(" in /sys/class/infiniband")}}, ev);
  ev["devices"] = *devs;

  std::vector<PortRef> all;
  for (const IbDevice& d : *devs) {
    for (const IbPort& p : d.ports) all.push_back({&d, &p});
  }
  const auto active = [](const PortRef& r) { return state_number(r.port->state) == 4 && usable_link(*r.port); };
  std::vector<std::string> active_names;
  for (const PortRef& r : all) {
    if (active(r)) active_names.push_back(r.name());
  }

  const std::optional<NcclSetting> disable = nccl_setting(f, "NCCL_IB_DISABLE");
  if (disable) {
    const std::optional<std::int64_t> v = nccl_int_value(disable->value);
    ev["nccl_ib_disable"] = {{"value", disable->value}, {"origin", disable->origin}, {"disables", v && *v != 0}};
    if (v && *v != 0) {
      if (!active_names.empty()) {
        b.add(kIbDisabled, {{"value", printable(disable->value)},
                            {"origin", disable->origin},
                            {"active", active_names.size()},
                            {"active_ports", join(active_names, ", ")}});
      } else {
        b.note("NCCL_IB_DISABLE=" + printable(disable->value) +
               ": NCCL uses TCP sockets; no RDMA port is ACTIVE anyway");
      }
      return b.build();
    }
  }

  const std::optional<NcclSetting> hca = nccl_setting(f, "NCCL_IB_HCA");
  const NcclNameList list = parse_nccl_names(hca ? hca->value : std::string());
  std::vector<PortRef> selected;
  for (const PortRef& r : all) {
    if (nccl_selects(list, r.dev->name, r.port->port)) selected.push_back(r);
  }
  std::vector<std::string> dev_names;
  for (const IbDevice& d : *devs) dev_names.push_back(d.name);

  if (hca) {
    ev["nccl_ib_hca"] = {{"value", hca->value}, {"origin", hca->origin}};
    std::vector<std::string> traps;
    for (const auto& [entry, other] : nccl_prefix_traps(list, dev_names))
      traps.push_back(entry + " also selects " + other);
    if (!traps.empty()) {
      b.add(kPrefixTrap,
            {{"hca", printable(hca->value)}, {"traps", join(traps, ", ")}, {"exact", exact_form(hca->value)}});
      ev["prefix_traps"] = traps;
    }
    if (!list.exclude) {
      for (const NcclNameEntry& e : list.entries) {
        bool dev_found = false, port_found = false;
        for (const PortRef& r : all) {
          const bool name_ok = list.exact ? r.dev->name == e.name : r.dev->name.starts_with(e.name);
          if (!name_ok) continue;
          dev_found = true;
          port_found = port_found || !e.port || *e.port == r.port->port;
        }
        for (const IbDevice& d : *devs)
          dev_found = dev_found || (list.exact ? d.name == e.name : d.name.starts_with(e.name));
        const std::string entry = e.name + (e.port ? ":" + std::to_string(*e.port) : std::string());
        if (!dev_found) {
          b.add(
              kUnknownDevice,
              {{"entry", printable(entry)}, {"devices", join(dev_names, ", ")}, {"device_list", join(dev_names, ",")}});
        } else if (!port_found) {
          b.add(kUnknownPort, {{"entry", printable(entry)}, {"device", e.name}});
        }
      }
    }
  }

  nlohmann::json sel = nlohmann::json::array();
  std::vector<PortRef> used;
  for (const PortRef& r : selected) {
    sel.push_back(r.name());
    if (active(r)) used.push_back(r);
  }
  ev["selected_ports"] = sel;
  nlohmann::json used_json = nlohmann::json::array();
  for (const PortRef& r : used) used_json.push_back(r.name());
  ev["used_ports"] = used_json;

  std::vector<std::string> not_active, unknown_state;
  for (const PortRef& r : selected) {
    if (active(r)) continue;
    (r.port->state.empty() ? unknown_state : not_active).push_back(port_text(r));
  }
  if (!unknown_state.empty() && used.empty()) b.add(kStateUnreadable, {{"unreadable", join(unknown_state, ", ")}});
  const std::string hca_text = hca ? "NCCL_IB_HCA=" + printable(hca->value) : std::string("NCCL (NCCL_IB_HCA unset)");
  std::vector<std::string> used_names;
  for (const PortRef& r : used) used_names.push_back(r.name());
  if (used.empty() && unknown_state.empty()) {
    if (hca && active_names.empty()) {
      b.add(kHcaNoneActive, {{"selected_by", hca_text},
                             {"down_note", part_if(!not_active.empty(), ": {down_ports}")},
                             {"down_ports", join(not_active, ", ")}});
    } else if (hca) {
      b.add(kHcaMissesActive, {{"selected_by", hca_text},
                               {"down_note", part_if(!not_active.empty(), ": {down_ports}")},
                               {"down_ports", join(not_active, ", ")},
                               {"active_ports", join(active_names, ", ")},
                               {"first_active", active_names.front()}});
    } else {
      b.add(kNoneActive, {{"down_ports", join(not_active, ", ")}});
    }
  } else if (!not_active.empty()) {
    b.add(kSomeInactive,
          {{"selected_by", hca_text}, {"down_ports", join(not_active, ", ")}, {"used_ports", join(used_names, ",")}});
  }

  std::set<std::string> layers;
  std::set<double> rates;
  std::vector<std::string> rate_list;
  for (const PortRef& r : used) {
    layers.insert(link_word(*r.port));
    if (const auto g = rate_gbps(r.port->rate)) rates.insert(*g);
    rate_list.push_back(r.name() + " " + (r.port->rate.empty() ? std::string("?") : r.port->rate));
  }
  if (layers.size() > 1) {
    std::vector<std::string> per;
    for (const PortRef& r : used) per.push_back(r.name() + " " + link_word(*r.port));
    b.add(kMixedLinkLayers, {{"per_port", join(per, ", ")}});
  }
  if (rates.size() > 1) b.add(kMixedRates, {{"port_rates", join(rate_list, ", ")}});

  if (!used.empty()) {
    const std::string gdr = f.net.gpudirect_rdma.ok()
                                ? (*f.net.gpudirect_rdma.value() ? "GPUDirect RDMA module loaded"
                                                                 : "no GPUDirect RDMA module (nvidia_peermem) loaded")
                                : "GPUDirect RDMA unknown";
    b.add(kPorts, {{"selected_by", hca_text},
                   {"count", used.size()},
                   {"ports", join(used_names, ", ")},
                   {"link", join(std::vector<std::string>(layers.begin(), layers.end()), "+")},
                   {"rate", part_if(!rate_list.empty(), ", {port_rate}")},
                   {"port_rate", used.front().port->rate},
                   {"gdr", gdr}});
  }
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  /sys/class/infiniband/<dev>/: the device's PCI address (device link) and every port's state,
  phys_state, rate, link_layer, non-zero GIDs (gids/<n>) and their netdevs (gid_attrs/ndevs/<n>,
  skipped silently where a container returns EINVAL); GPUDirect RDMA: /sys/kernel/mm/memory_peers/
  nv_mem/version or /sys/module/nvidia_peermem/version. NCCL_IB_HCA and NCCL_IB_DISABLE from the
  environment or NCCL's configuration files.

How NCCL chooses (ncclIbInitDevices)
  Only ports in state ACTIVE with link layer InfiniBand or Ethernet (RoCE). NCCL_IB_HCA is a comma
  list of device prefixes with optional ":port": "mlx5_1" also selects mlx5_10..mlx5_17; a leading
  '^' excludes, then a leading '=' makes names exact ("=mlx5_0:1,mlx5_1:1", "^=mlx5_4"). Unset or
  empty selects everything. NCCL_IB_DISABLE (any non-zero integer) turns the IB transport off.

Failures
  FAIL     NCCL_IB_HCA selects no ACTIVE port (NCCL falls back to TCP sockets).
  FAIL     NCCL_IB_HCA names a device, or a port, that does not exist.
  WARN     prefix trap: NCCL_IB_HCA=mlx5_1 also selects mlx5_10.
  WARN     selected ports that are not ACTIVE; no ACTIVE port at all with NCCL_IB_HCA unset.
  WARN     the ports in use mix InfiniBand and RoCE (NCCL errors when merging them).
  WARN     the ports in use have unequal rates (a 200G port among 400G ones halves the ring).
  WARN     NCCL_IB_DISABLE=1 while ACTIVE ports exist: the job runs over TCP sockets.
  SKIP     no RDMA devices (/sys/class/infiniband absent or empty).
  UNKNOWN  sysfs could not be read.

Fix
  export NCCL_IB_HCA==mlx5_0:1,mlx5_1:1   (exact names and ports)
  unset NCCL_IB_DISABLE
  ibstat / ibv_devinfo   (port state, rate; check cables and the subnet manager))";

}  // namespace

extern const CheckSpec kNetIb = {"net.ib",
                                 Scope::Node,
                                 "RDMA devices and ports ACTIVE; NCCL_IB_HCA selects what exists, exactly",
                                 kExplain,
                                 kInNode | kInJob,
                                 "an image build's network is not the one the job will get",
                                 &run,
                                 "net",
                                 false,
                                 {},
                                 {},
                                 nullptr,
                                 kFindings};

}  // namespace net_ib_check
}  // namespace preflight
