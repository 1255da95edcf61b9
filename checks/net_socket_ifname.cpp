// SPDX-License-Identifier: MIT
// net.socket_ifname: the interface NCCL's bootstrap (and NET/Socket) will use, found exactly as NCCL
// finds it, and the interfaces GLOO_SOCKET_IFNAME names for PyTorch's Gloo.
#include <algorithm>
#include <array>
#include <set>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "core/nccl_names.hpp"
#include "core/nccl_socket.hpp"
#include "core/text.hpp"

namespace preflight {
namespace net_socket_ifname_check {
namespace {

const NetInterface* find_if(const std::vector<NetInterface>& ifs, std::string_view name) {
  for (const NetInterface& i : ifs) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

bool is_loopback_choice(const std::vector<NetInterface>& ifs, const SocketChoice& c) {
  const NetInterface* i = find_if(ifs, c.interface);
  return (i != nullptr && i->loopback) || is_loopback_ip(c.address.address) || c.interface == "lo";
}

std::string family_word(std::string_view family) {
  return family == "inet" ? "IPv4" : family == "inet6" ? "IPv6" : "IPv4 or IPv6";
}

std::string speed_text(const NetInterface* i) {
  if (i != nullptr && i->speed_mbps) {
    return *i->speed_mbps % 1000 == 0 ? std::to_string(*i->speed_mbps / 1000) + " Gb/s"
                                      : std::to_string(*i->speed_mbps) + " Mb/s";
  }
  return "speed unknown: NCCL assumes 10 Gb/s";
}

std::string list_interfaces(const std::vector<NetInterface>& ifs, bool addresses_known) {
  std::vector<std::string> parts;
  for (const NetInterface& i : ifs) {
    std::string d = describe_interface(i);
    if (!addresses_known)
      d = i.name + " (" +
          (i.running ? "running"
           : i.up    ? "up, not running"
                     : "down") +
          ", operstate " + (i.operstate.empty() ? "?" : i.operstate) + ")";
    parts.push_back(std::move(d));
  }
  return parts.empty() ? std::string("none") : join(parts, ", ");
}

// The state of an interface that is not running: "down, operstate down".
std::string down_state(const NetInterface& i) {
  return std::string(i.up ? "up, no carrier" : "down") +
         (i.operstate.empty() ? std::string() : ", operstate " + i.operstate);
}

// Why an interface the list names is not usable for NCCL.
std::string unusable_reason(const NetInterface& i, std::string_view family) {
  if (!i.running) return i.name + " is not running (" + down_state(i) + ")";
  return i.name + " has no " + family_word(family) + " address";
}

// The value with '=' inserted after an optional '^': prefix matching turned into exact names.
std::string exact_form(std::string_view value) {
  const bool exclude = !value.empty() && value.front() == '^';
  if (exclude) value.remove_prefix(1);
  return std::string(exclude ? "^" : "") + "=" + std::string(value);
}

nlohmann::json choice_json(const SocketChoice& c) {
  return {{"interface", c.interface}, {"address", c.address.address}, {"prefix", c.address.prefix}};
}

constexpr FindingSpec kGlooEmptyEntry = {
    "net.socket_ifname/gloo-empty-entry", Status::Warn,
    "GLOO_SOCKET_IFNAME='{gloo}' has an empty entry: Gloo looks up an interface named ''",
    "Remove the empty entry: a comma-separated list of exact interface names."};
constexpr FindingSpec kGlooMissing = {
    "net.socket_ifname/gloo-missing", Status::Fail,
    "GLOO_SOCKET_IFNAME names {name}, which does not exist (interfaces: {interfaces}){grammar}",
    "Set GLOO_SOCKET_IFNAME to interfaces that exist on every node, comma-separated exact names (e.g. `export "
    "GLOO_SOCKET_IFNAME={gloo_example}`)."};
constexpr FindingSpec kGlooNotRunning = {
    "net.socket_ifname/gloo-not-running", Status::Fail,
    "GLOO_SOCKET_IFNAME names {name}, but {name} is not running ({state}); Gloo fails with 'Unable to find address "
    "for: {name}'",
    "Bring {name} up (`ip link set {name} up`, check its link) or name another interface in GLOO_SOCKET_IFNAME."};
constexpr FindingSpec kGlooNoAddress = {
    "net.socket_ifname/gloo-no-address", Status::Fail,
    "GLOO_SOCKET_IFNAME names {name}, but {name} has no IPv4 or IPv6 address; Gloo fails with 'Unable to find "
    "address for: {name}'",
    "Give {name} an address or name another interface in GLOO_SOCKET_IFNAME."};
constexpr FindingSpec kGlooLoopback = {
    "net.socket_ifname/gloo-loopback", Status::Fail,
    "GLOO_SOCKET_IFNAME names the loopback interface {name} in a multi-node job",
    "Set GLOO_SOCKET_IFNAME to the interface the nodes reach each other on (e.g. the one NCCL uses)."};
constexpr FindingSpec kFamilyIgnored = {
    "net.socket_ifname/family-ignored", Status::Warn,
    "NCCL_SOCKET_FAMILY={socket_family} is ignored by NCCL: only AF_INET and AF_INET6 are understood",
    "Write `export NCCL_SOCKET_FAMILY=AF_INET` (or AF_INET6), or unset it."};
constexpr FindingSpec kPrefixTrap = {"net.socket_ifname/prefix-trap", Status::Warn,
                                     "NCCL_SOCKET_IFNAME={ifname} matches by prefix: {traps}",
                                     "Name the interfaces exactly: `export NCCL_SOCKET_IFNAME={exact}`."};
constexpr FindingSpec kNoMatch = {
    "net.socket_ifname/no-match", Status::Fail,
    "NCCL_SOCKET_IFNAME={ifname} matches no interface; interfaces here: {interfaces}",
    "Set NCCL_SOCKET_IFNAME to an interface that exists on every node (see `ip -br addr`), e.g. `export "
    "NCCL_SOCKET_IFNAME=={example}`."};
// "Bootstrap : no socket interface found" is NCCL's own message.
#define PREFLIGHT_NO_USABLE_MATCH                                                                             \
  "NCCL_SOCKET_IFNAME={ifname} matches no usable interface: {reasons}{family_note}: NCCL finds no interface " \
  "(\"Bootstrap : no socket interface found\")"
constexpr FindingSpec kMatchesDown = {
    "net.socket_ifname/matches-down", Status::Fail, PREFLIGHT_NO_USABLE_MATCH,
    "Bring the interface up (`ip link set <if> up`, check its link) or point NCCL_SOCKET_IFNAME at a running "
    "interface."};
constexpr FindingSpec kMatchesUnusable = {
    "net.socket_ifname/matches-unusable", Status::Fail, PREFLIGHT_NO_USABLE_MATCH,
    "Bring the interface up (`ip link set <if> up`, check its link and address) or point NCCL_SOCKET_IFNAME at a "
    "running interface with an address, e.g. `export NCCL_SOCKET_IFNAME=={example}`."};
constexpr FindingSpec kMatchesNoFamilyAddress = {
    "net.socket_ifname/matches-no-family-address", Status::Fail, PREFLIGHT_NO_USABLE_MATCH,
    "Give the interface an {family} address, or unset NCCL_SOCKET_FAMILY (`unset NCCL_SOCKET_FAMILY`)."};
#undef PREFLIGHT_NO_USABLE_MATCH
constexpr FindingSpec kAddressesUnknown = {
    "net.socket_ifname/addresses-unknown", Status::Unknown,
    "the interfaces' addresses are not known from a --sysroot tree: NCCL's choice cannot be replayed",
    "Run preflight on the node itself (without --sysroot) to see which interface NCCL will use."};
constexpr FindingSpec kNoInterface = {
    "net.socket_ifname/no-interface", Status::Fail,
    "no interface is running with an {family} address: NCCL finds none; interfaces here: {interfaces}",
    "Bring a network interface up with an address (`ip -br addr`), or set NCCL_SOCKET_IFNAME to the one the nodes "
    "share."};
constexpr FindingSpec kBootstrapLoopback = {
    "net.socket_ifname/bootstrap-loopback", Status::Fail,
    "NCCL's bootstrap would use the loopback interface {interface} ({address}, by {selected_by}) in a multi-node "
    "job: other nodes cannot reach it",
    "Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on, e.g. `export NCCL_SOCKET_IFNAME==eth0` "
    "(see `ip -br addr`)."};
constexpr FindingSpec kBootstrapBridge = {
    "net.socket_ifname/bootstrap-bridge", Status::Warn,
    "NCCL's default order lands on {interface} ({address}, a container/virtual bridge) in a multi-node job: no "
    "other interface is running with an address",
    "Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on (`export NCCL_SOCKET_IFNAME==<if>`)."};
constexpr FindingSpec kAlsoLoopback = {"net.socket_ifname/also-loopback", Status::Warn,
                                       "NET/Socket would also use the loopback interface {loopback} ({selected_by})",
                                       "Exclude it: `export NCCL_SOCKET_IFNAME=={interface}`."};
constexpr FindingSpec kMixedSubnets = {
    "net.socket_ifname/mixed-subnets", Status::Warn,
    "{selected_by} selects interfaces in different subnets ({subnets}): NCCL's NET/Socket transport uses every one "
    "of them",
    "Pin the interface the nodes share: `export NCCL_SOCKET_IFNAME=={interface}`."};
constexpr FindingSpec kBootstrap = {
    "net.socket_ifname/bootstrap", Status::Pass,
    "NCCL's bootstrap will use {interface} {address}/{prefix} ({speed}), selected by {selected_by}{net_socket}", ""};

constexpr FindingSpec kFactsUnreadable = {"net.socket_ifname/facts-unreadable", Status::Unknown, kUnreadableMessage,
                                          kUnreadableFix};
constexpr FindingSpec kFactsHung = {"net.socket_ifname/facts-hung", Status::Unknown, kHungMessage, kHungProbeRemedy};

constexpr std::array kFindings = {
    kFactsUnreadable,   kFactsHung,       kGlooEmptyEntry,         kGlooMissing,      kGlooNotRunning,
    kGlooNoAddress,     kGlooLoopback,    kFamilyIgnored,          kPrefixTrap,       kNoMatch,
    kMatchesDown,       kMatchesUnusable, kMatchesNoFamilyAddress, kAddressesUnknown, kNoInterface,
    kBootstrapLoopback, kBootstrapBridge, kAlsoLoopback,           kMixedSubnets,     kBootstrap};

void judge_gloo(const CheckContext& ctx, const std::vector<NetInterface>& ifs, bool multi, VerdictBuilder& b) {
  const std::optional<std::string> gloo = ctx.facts.env.get("GLOO_SOCKET_IFNAME");
  if (!gloo) return;
  nlohmann::json ev = nlohmann::json::array();
  std::vector<std::string> used;
  const std::vector<std::string_view> names = split(*gloo, ',');
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::string name(names[k]);
    if (name.empty()) {
      if (k + 1 < names.size()) b.add(kGlooEmptyEntry, {{"gloo", printable(*gloo)}});
      continue;
    }
    const NetInterface* i = find_if(ifs, name);
    nlohmann::json e = {{"name", name}};
    if (i == nullptr) {
      const bool grammar = name.find_first_of("^=") != std::string::npos;
      b.add(kGlooMissing, {{"name", printable(name)},
                           {"interfaces", list_interfaces(ifs, true)},
                           {"grammar", part_if(grammar, "; Gloo takes exact names: no '^' or '=' and no prefixes")},
                           {"gloo_example", ifs.empty() ? std::string("eth0") : ifs.back().name}});
      e["problem"] = "does not exist";
    } else {
      const NetAddress* addr = nullptr;
      for (const NetAddress& a : i->addresses) {
        if (addr == nullptr) addr = &a;
      }
      if (!i->running) {
        b.add(kGlooNotRunning, {{"name", name}, {"state", down_state(*i)}});
        e["problem"] = "not running";
      } else if (addr == nullptr) {
        b.add(kGlooNoAddress, {{"name", name}});
        e["problem"] = "no address";
      } else {
        e["address"] = addr->address;
        used.push_back(name + " " + addr->address);
        if (multi && (i->loopback || is_loopback_ip(addr->address))) b.add(kGlooLoopback, {{"name", name}});
      }
    }
    ev.push_back(std::move(e));
  }
  b.evidence()["gloo_socket_ifname"] = {{"value", *gloo}, {"interfaces", ev}};
  if (!used.empty()) b.note("Gloo will use " + join(used, ", "));
}

Verdict run(const CheckContext& ctx) {
  const RankFacts& f = ctx.facts;
  const std::vector<NetInterface>* ifs_ptr = f.net.interfaces.value();
  if (ifs_ptr == nullptr) return unknown_from(f.net.interfaces, "the network interfaces", kFactsUnreadable, kFactsHung);
  const std::vector<NetInterface>& ifs = *ifs_ptr;
  const bool addresses_known = f.net.interfaces.source() != kInterfacesSysfsSource;
  const bool multi = is_multi_node(f.placement);

  const std::optional<NcclSetting> ifname = nccl_setting(f, "NCCL_SOCKET_IFNAME");
  const std::optional<NcclSetting> family = nccl_setting(f, "NCCL_SOCKET_FAMILY");
  const std::optional<NcclSetting> comm_id = nccl_setting(f, "NCCL_COMM_ID");
  const SocketSelection sel = nccl_socket_select(ifs, ifname ? std::optional<std::string>(ifname->value) : std::nullopt,
                                                 family ? std::optional<std::string>(family->value) : std::nullopt,
                                                 comm_id ? std::optional<std::string>(comm_id->value) : std::nullopt);

  VerdictBuilder b;
  nlohmann::json& ev = b.evidence();
  ev["interfaces"] = ifs;
  ev["interfaces_source"] = f.net.interfaces.source();
  ev["multi_node"] = multi;
  if (ifname) ev["nccl_socket_ifname"] = {{"value", ifname->value}, {"origin", ifname->origin}, {"used", sel.from_env}};
  if (family)
    ev["nccl_socket_family"] = {{"value", family->value}, {"origin", family->origin}, {"ignored", sel.family_ignored}};
  ev["selection"] = {{"rule", sel.rule}, {"from_env", sel.from_env}, {"tried", sel.tried}, {"family", sel.family}};
  nlohmann::json matches = nlohmann::json::array();
  for (const SocketChoice& c : sel.matches) matches.push_back(choice_json(c));
  ev["selection"]["matches"] = matches;
  if (!sel.comm_id_note.empty()) ev["selection"]["comm_id_note"] = sel.comm_id_note;

  const std::string rule_text =
      sel.from_env ? "NCCL_SOCKET_IFNAME=" + printable(sel.rule)
                   : "NCCL's default order (" + (sel.rule.empty() ? std::string("none") : sel.rule) + ")";
  if (ifname && !sel.from_env) {
    b.note("NCCL_SOCKET_IFNAME='" + printable(ifname->value) + "' is ignored by NCCL (a value of 1 character or less)");
  }
  if (sel.family_ignored) b.add(kFamilyIgnored, {{"socket_family", printable(family->value)}});

  std::vector<std::string> all_names;
  for (const NetInterface& i : ifs) all_names.push_back(i.name);
  if (sel.from_env) {
    const NcclNameList list = parse_nccl_names(sel.rule);
    std::vector<std::string> traps;
    for (const auto& [entry, other] : nccl_prefix_traps(list, all_names))
      traps.push_back(entry + " also matches " + other);
    if (!traps.empty()) {
      b.add(kPrefixTrap,
            {{"ifname", printable(sel.rule)}, {"traps", join(traps, ", ")}, {"exact", exact_form(sel.rule)}});
      ev["prefix_traps"] = traps;
    }
  }

  if (!addresses_known) {
    const NcclNameList list = parse_nccl_names(sel.from_env ? sel.rule : "");
    bool any_name = false, any_running = false;
    std::vector<std::string> down;
    for (const NetInterface& i : ifs) {
      if (!nccl_selects(list, i.name)) continue;
      any_name = true;
      any_running = any_running || i.running;
      if (!i.running) down.push_back(unusable_reason(i, ""));
    }
    if (sel.from_env && !any_name) {
      b.add(kNoMatch, {{"ifname", printable(sel.rule)},
                       {"interfaces", list_interfaces(ifs, false)},
                       {"example", ifs.empty() ? std::string("eth0") : ifs.back().name}});
    } else if (sel.from_env && !any_running) {
      b.add(kMatchesDown,
            {{"ifname", printable(sel.rule)}, {"reasons", join(down, "; ")}, {"family_note", part_if(false, "")}});
    } else {
      b.add(kAddressesUnknown);
    }
    return b.build();
  }

  if (sel.matches.empty()) {
    if (sel.from_env) {
      const NcclNameList list = parse_nccl_names(sel.rule);
      std::vector<std::string> reasons;
      bool any_down = false;
      for (const NetInterface& i : ifs) {
        if (!nccl_selects(list, i.name)) continue;
        reasons.push_back(unusable_reason(i, sel.family));
        any_down = any_down || !i.running;
      }
      const std::vector<SocketChoice> fallback =
          nccl_socket_select(ifs, std::nullopt, std::nullopt, std::nullopt).matches;
      const std::string suggestion = fallback.empty() ? std::string("eth0") : fallback.front().interface;
      if (reasons.empty()) {
        b.add(kNoMatch,
              {{"ifname", printable(sel.rule)}, {"interfaces", list_interfaces(ifs, true)}, {"example", suggestion}});
      } else {
        const nlohmann::json params = {
            {"ifname", printable(sel.rule)},
            {"reasons", join(reasons, "; ")},
            {"family_note", part_if(!sel.family.empty(), " (NCCL_SOCKET_FAMILY={family_value})")},
            {"family_value", sel.family.empty() ? std::string() : family->value},
            {"family", family_word(sel.family)},
            {"example", suggestion}};
        b.add(sel.family.empty() || any_down ? kMatchesUnusable : kMatchesNoFamilyAddress, params);
      }
    } else {
      b.add(kNoInterface, {{"family", family_word(sel.family)}, {"interfaces", list_interfaces(ifs, true)}});
    }
    judge_gloo(ctx, ifs, multi, b);
    return b.build();
  }

  const SocketChoice& boot = sel.matches.front();
  const NetInterface* boot_if = find_if(ifs, boot.interface);
  ev["bootstrap"] = choice_json(boot);
  const bool boot_loopback = is_loopback_choice(ifs, boot);
  const nlohmann::json at = {
      {"interface", boot.interface}, {"address", boot.address.address}, {"selected_by", rule_text}};
  const auto with = [&](nlohmann::json more) {
    nlohmann::json p = at;
    p.update(more);
    return p;
  };
  if (multi && boot_loopback) {
    b.add(kBootstrapLoopback, at);
  } else if (multi && !sel.from_env && (sel.rule == "docker" || sel.rule == "virbr")) {
    b.add(kBootstrapBridge, at);
  }
  if (multi) {
    for (std::size_t k = 1; k < sel.matches.size(); ++k) {
      if (is_loopback_choice(ifs, sel.matches[k]) && !boot_loopback) {
        b.add(kAlsoLoopback, with({{"loopback", sel.matches[k].interface}}));
      }
    }
  }
  std::set<std::string> subnets;
  std::vector<std::string> per_if;
  for (const SocketChoice& c : sel.matches) {
    subnets.insert(subnet_text(c.address));
    per_if.push_back(c.interface + " " + subnet_text(c.address));
  }
  const bool known_single = f.placement.nodes && *f.placement.nodes == 1;
  if (subnets.size() > 1 && !known_single) b.add(kMixedSubnets, with({{"subnets", join(per_if, ", ")}}));

  judge_gloo(ctx, ifs, multi, b);
  b.add(kBootstrap,
        with({{"prefix", boot.address.prefix},
              {"speed", speed_text(boot_if)},
              {"net_socket", part_if(sel.matches.size() > 1, "; NET/Socket would use {socket_interfaces} interfaces")},
              {"socket_interfaces", sel.matches.size()}}));
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  Every interface with its flags (IFF_UP, IFF_RUNNING, IFF_LOOPBACK) and addresses (getifaddrs), and
  from /sys/class/net/<if>/: operstate, speed, mtu, type, the PCI device and the RDMA device behind
  it. NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY and NCCL_COMM_ID from the environment or NCCL's
  configuration files, GLOO_SOCKET_IFNAME from the environment. Under --sysroot, a `preflight
  capture` holds the interfaces with their addresses (judged as on the node); any other tree only
  its sysfs part (no addresses).

How NCCL chooses (ncclFindInterfaces, replayed exactly)
  Only interfaces that are IFF_RUNNING with an AF_INET/AF_INET6 address count (not the IPv6
  loopback); IPv4 addresses come first in getifaddrs order. NCCL_SOCKET_IFNAME (used only when
  longer than 1 character) is a comma list of prefixes: "eth" matches eth0 and eth10; a leading '^'
  excludes, then a leading '=' makes the names exact ("^=docker0"). NCCL_SOCKET_FAMILY=AF_INET or
  AF_INET6 restricts the family; other values are ignored. Unset: first "ib*", then the interface in
  NCCL_COMM_ID's subnet, then anything but docker*/lo*/virbr*, then docker*, lo*, virbr*. The
  bootstrap uses the FIRST match; NET/Socket uses all matches (up to 16). GLOO_SOCKET_IFNAME is a
  comma list of exact names; each must be running with an address.

Failures
  FAIL     NCCL_SOCKET_IFNAME matches no interface (the interfaces that exist are listed).
  FAIL     it matches only interfaces that are down or have no address of the family.
  FAIL     no interface is running with an address (default selection finds nothing).
  FAIL     the bootstrap interface is loopback in a multi-node job.
  FAIL     GLOO_SOCKET_IFNAME names an interface that does not exist, is down, has no address, or
           is loopback in a multi-node job.
  WARN     prefix trap: NCCL_SOCKET_IFNAME=eth1 also matches eth10.
  WARN     the matches lie in different subnets (NET/Socket stripes data over all of them).
  WARN     the default order lands on docker*/virbr* in a multi-node job; NET/Socket would also use lo.
  WARN     NCCL_SOCKET_FAMILY has a value NCCL ignores.
  UNKNOWN  the interfaces could not be read, or (--sysroot) their addresses are not known.

Fix
  export NCCL_SOCKET_IFNAME==eth0   (exact name; '^=docker0,lo' to exclude exactly)
  export GLOO_SOCKET_IFNAME=eth0
  ip link set eth0 up; ip -br addr   (see what is running and addressed))";

}  // namespace

extern const CheckSpec kNetSocketIfname = {
    "net.socket_ifname",
    Scope::Rank,
    "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME select an interface that is up, addressed and right for the job",
    kExplain,
    kInNode | kInJob,
    "an image build's network is not the one the job will get",
    &run,
    "net",
    false,
    {},
    "a usable socket interface",
    nullptr,
    kFindings};

}  // namespace net_socket_ifname_check
}  // namespace preflight
