// SPDX-License-Identifier: MIT
// net.master: MASTER_ADDR resolves to an address the other ranks can reach, and MASTER_PORT is a
// port that PyTorch's TCPStore can listen on at the master; in a job, every rank names the same pair.
#include <algorithm>
#include <array>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "core/nccl_socket.hpp"
#include "core/text.hpp"

namespace preflight {
namespace net_master_check {
namespace {

constexpr std::string_view kDebianHostnameAddress = "127.0.1.1";

bool contains_ip(const std::vector<std::string>& list, std::string_view ip) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& a) { return same_ip(a, ip); });
}

#define PREFLIGHT_DIFFERS                                                                                   \
  "{variable} differs between ranks: {groups}: the ranks rendezvous at different places and wait for each " \
  "other until the timeout"
constexpr FindingSpec kDiffers = {
    "net.master/differs-between-ranks", Status::Fail, PREFLIGHT_DIFFERS,
    "Set one value for the whole job, the majority's: `export {variable}={majority}` in the job script before the "
    "launcher (mpirun -x {variable}, srun --export=ALL), not per node."};
constexpr FindingSpec kDiffersMostlyUnset = {
    "net.master/differs-between-ranks-mostly-unset", Status::Fail, PREFLIGHT_DIFFERS,
    "Unset {variable} on every rank, or set it to one value for the whole job in the job script, before the launcher "
    "starts the ranks."};
#undef PREFLIGHT_DIFFERS
constexpr FindingSpec kUnset = {
    "net.master/unset", Status::Skip,
    "MASTER_ADDR and MASTER_PORT are not set (only torch.distributed's env:// rendezvous reads them)", ""};
constexpr FindingSpec kAddrMissing = {
    "net.master/addr-missing", Status::Fail,
    "MASTER_PORT={master_port} is set but MASTER_ADDR is not: env:// rendezvous fails (\"environment variable "
    "MASTER_ADDR expected, but not set\")",
    "export MASTER_ADDR=<the master node's address on the network the nodes share>"};
#define PREFLIGHT_PORT_FIX "export MASTER_PORT=29500   (any free port below 32768 on the master)"
constexpr FindingSpec kPortMissing = {
    "net.master/port-missing", Status::Fail,
    "MASTER_ADDR={addr} is set but MASTER_PORT is not: env:// rendezvous fails (\"environment variable MASTER_PORT "
    "expected, but not set\")",
    PREFLIGHT_PORT_FIX};
constexpr FindingSpec kPortInvalid = {"net.master/port-invalid", Status::Fail,
                                      "MASTER_PORT='{master_port}' is not a port number in 1..65535",
                                      PREFLIGHT_PORT_FIX};
#undef PREFLIGHT_PORT_FIX
#define PREFLIGHT_HOSTNAME_ADDRESS_FIX                                                                                 \
  "Set MASTER_ADDR to the master's address on the shared network (e.g. `export MASTER_ADDR=$(hostname -I | cut -d' ' " \
  "-f1)`), or map the hostname to that address in /etc/hosts instead of 127.0.1.1."
constexpr FindingSpec kHostnameAddress = {
    "net.master/hostname-address", Status::Fail,
    "MASTER_ADDR={addr} resolves to 127.0.1.1 on this host (Debian/Ubuntu map the hostname there in /etc/hosts): "
    "other nodes cannot reach the rendezvous or Gloo through it",
    PREFLIGHT_HOSTNAME_ADDRESS_FIX};
constexpr FindingSpec kHostnameAddressOneNode = {
    "net.master/hostname-address-one-node", Status::Warn,
    "MASTER_ADDR={addr} resolves to 127.0.1.1 on this host (Debian/Ubuntu map the hostname there in /etc/hosts): it "
    "works on one node only",
    PREFLIGHT_HOSTNAME_ADDRESS_FIX};
#undef PREFLIGHT_HOSTNAME_ADDRESS_FIX
constexpr FindingSpec kLoopback = {
    "net.master/loopback", Status::Fail,
    "MASTER_ADDR={addr} resolves to the loopback address {address} in a multi-node job: the other nodes connect to "
    "themselves",
    "Set MASTER_ADDR to the master node's address on the network the nodes share (`hostname -I` on the master)."};
constexpr FindingSpec kResolveTimeout = {
    "net.master/resolve-timeout", Status::Fail,
    "MASTER_ADDR={addr} {detail} (getaddrinfo; the DNS server is slow or unreachable)",
    "Use a numeric MASTER_ADDR, or fix name resolution (`getent hosts {addr}`, /etc/resolv.conf)."};
constexpr FindingSpec kResolveOutOfBudget = {
    "net.master/resolve-out-of-budget", Status::Unknown, "MASTER_ADDR={addr} {detail}",
    "preflight's own budget ended the lookup, not the DNS server: give the run the --timeout the message names, or "
    "use a numeric MASTER_ADDR."};
constexpr FindingSpec kNotResolved = {"net.master/not-resolved", Status::Unknown,
                                      "MASTER_ADDR={addr} was not resolved: {why}",
                                      "Run preflight on the node itself (without --sysroot) to resolve MASTER_ADDR."};
constexpr FindingSpec kDoesNotResolve = {
    "net.master/does-not-resolve", Status::Fail, "MASTER_ADDR={addr} does not resolve: {detail}",
    "Fix the name (`getent hosts {addr}`) or use the master's IP address: `export MASTER_ADDR=<ip>`."};
constexpr FindingSpec kPortInUse = {
    "net.master/port-in-use", Status::Fail,
    "MASTER_PORT {port} is already in use on this host, the master ({where}): the rendezvous store cannot listen",
    "Find the process: `ss -ltnp 'sport = :{port}'` (as root to see every user's); stop it, or choose a free port: "
    "`export MASTER_PORT=<port>`."};
constexpr FindingSpec kPortPrivileged = {
    "net.master/port-privileged", Status::Fail,
    "MASTER_PORT {port} cannot be bound on {address}: {bind} (ports below 1024 need CAP_NET_BIND_SERVICE)",
    "Use a port above 1023: `export MASTER_PORT=29500`."};
constexpr FindingSpec kBindFailed = {"net.master/bind-failed", Status::Fail,
                                     "MASTER_PORT {port} cannot be bound on {address}: {bind}",
                                     "Set MASTER_ADDR to an address of this host and a free MASTER_PORT."};
constexpr FindingSpec kPortStateUnknown = {
    "net.master/port-state-unknown", Status::Unknown,
    "could not tell whether MASTER_PORT {port} is free: {listening_why}; {bind_why}",
    "Run preflight on the master node itself, where /proc/net/tcp is readable."};
constexpr FindingSpec kPortEphemeral = {
    "net.master/port-ephemeral", Status::Warn,
    "MASTER_PORT {port} lies in the ephemeral port range {low}-{high}: an outgoing connection can take it before the "
    "rendezvous listens",
    "Choose a port below {low} (e.g. `export MASTER_PORT=29500`), or reserve it: `sysctl -w "
    "net.ipv4.ip_local_reserved_ports={port}`."};
constexpr FindingSpec kResolves = {"net.master/resolves", Status::Pass,
                                   "MASTER_ADDR={addr} resolves to {addresses}{this_host}", ""};

constexpr std::array kFindings = {kDiffers,
                                  kDiffersMostlyUnset,
                                  kUnset,
                                  kAddrMissing,
                                  kPortMissing,
                                  kPortInvalid,
                                  kHostnameAddress,
                                  kHostnameAddressOneNode,
                                  kLoopback,
                                  kResolveTimeout,
                                  kResolveOutOfBudget,
                                  kNotResolved,
                                  kDoesNotResolve,
                                  kPortInUse,
                                  kPortPrivileged,
                                  kBindFailed,
                                  kPortStateUnknown,
                                  kPortEphemeral,
                                  kResolves};

template <typename T>
nlohmann::json probed_json(const Probed<T>& p) {
  return nlohmann::json(p);
}

/// Every delivered rank must name the same rendezvous: a value that differs between ranks splits
/// the job into groups that wait for each other until the rendezvous times out.
void compare_ranks(const JobFacts& job, VerdictBuilder& b) {
  struct Variable {
    const char* name;
    std::string MasterFacts::*field;
  };
  for (const Variable var :
       {Variable{"MASTER_ADDR", &MasterFacts::addr}, Variable{"MASTER_PORT", &MasterFacts::port}}) {
    std::vector<std::pair<std::string, std::vector<const RankFacts*>>> groups;  // in order of first rank
    for (const RankFacts& f : job.ranks) {
      const std::string& value = f.net.master.*(var.field);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == value; });
      if (it == groups.end()) {
        groups.emplace_back(value, std::vector<const RankFacts*>{&f});
      } else {
        it->second.push_back(&f);
      }
    }
    if (groups.size() < 2) continue;
    std::size_t major = 0;
    for (std::size_t i = 1; i < groups.size(); ++i) {
      if (groups[i].second.size() > groups[major].second.size()) major = i;
    }
    const auto shown = [](const std::string& v) { return v.empty() ? std::string("unset") : "'" + printable(v) + "'"; };
    std::vector<std::string> parts;
    nlohmann::json ev = nlohmann::json::object();
    for (const auto& [value, members] : groups) {
      std::vector<int> ranks;
      std::vector<std::string> hosts;
      for (const RankFacts* f : members) {
        ranks.push_back(f->placement.rank);
        const std::string h = f->identity.hostname.empty() ? "?" : f->identity.hostname;
        if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
      }
      ev[value.empty() ? "(unset)" : value] = ranks;
      parts.push_back(shown(value) + " on " + (ranks.size() == 1 ? "rank " : "ranks ") + range_list(ranks) + " (" +
                      join(hosts, ", ") + ")");
    }
    b.evidence()[std::string(var.name) + "_by_rank"] = std::move(ev);
    const std::string& majority = groups[major].first;
    b.add(majority.empty() ? kDiffersMostlyUnset : kDiffers,
          {{"variable", var.name}, {"groups", join(parts, "; ")}, {"majority", printable(majority)}});
  }
}

Verdict run(const CheckContext& ctx) {
  const RankFacts& f = ctx.facts;
  const MasterFacts& m = f.net.master;
  VerdictBuilder b;
  if (ctx.job != nullptr && ctx.job->ranks.size() > 1) compare_ranks(*ctx.job, b);
  if (m.addr.empty() && m.port.empty()) {
    if (b.status() != Status::Pass) return b.build();
    return Verdict::of(kUnset);
  }
  const bool multi = is_multi_node(f.placement);
  const bool torchrun = f.placement.launcher == "torchrun" || f.env.has("TORCHELASTIC_RUN_ID");
  nlohmann::json& ev = b.evidence();
  ev["master_addr"] = m.addr;
  ev["master_port"] = m.port;
  ev["resolved"] = probed_json(m.resolved);
  ev["addr_is_local"] = m.addr_is_local;
  ev["hostname"] = f.identity.hostname;
  ev["hostname_resolves_to"] = probed_json(m.hostname_resolves_to);
  ev["port_listening"] = probed_json(m.port_listening);
  ev["bind_test"] = probed_json(m.bind_test);
  ev["ephemeral_range"] = probed_json(m.ephemeral_range);
  ev["reserved_ports"] = probed_json(m.reserved_ports);
  ev["multi_node"] = multi;
  ev["torchrun"] = torchrun;

  const std::string addr = printable(m.addr);
  if (m.addr.empty()) b.add(kAddrMissing, {{"master_port", printable(m.port)}});
  const auto port_value = parse_int(m.port);
  const bool port_ok = port_value && *port_value >= 1 && *port_value <= 65535;
  const int port = port_ok ? static_cast<int>(*port_value) : 0;
  if (m.port.empty()) {
    b.add(kPortMissing, {{"addr", addr}});
  } else if (!port_ok) {
    b.add(kPortInvalid, {{"master_port", printable(m.port)}});
  }

  std::string first_address;
  if (!m.addr.empty()) {
    if (const std::vector<std::string>* resolved = m.resolved.value()) {
      first_address = resolved->front();
      const bool name_is_host = !f.identity.hostname.empty() && to_lower(m.addr) == to_lower(f.identity.hostname);
      const std::vector<std::string>* host_addrs = m.hostname_resolves_to.value();
      const bool trap = contains_ip(*resolved, kDebianHostnameAddress) ||
                        (name_is_host && host_addrs != nullptr && contains_ip(*host_addrs, kDebianHostnameAddress));
      if (trap) {
        b.add(multi ? kHostnameAddress : kHostnameAddressOneNode, {{"addr", addr}});
      } else if (multi && is_loopback_ip(first_address)) {
        b.add(kLoopback, {{"addr", addr}, {"address", first_address}});
      }
    } else {
      const ProbeError& err = *m.resolved.error();
      if (err.code == ProbeErrc::Timeout) {
        b.add(kResolveTimeout, {{"addr", addr}, {"detail", err.detail}});
      } else if (err.code == ProbeErrc::OutOfBudget) {
        b.add(kResolveOutOfBudget, {{"addr", addr}, {"detail", err.detail}});
      } else if (err.code == ProbeErrc::Unsupported || err.code == ProbeErrc::NotProbed) {
        b.add(kNotResolved, {{"addr", addr}, {"why", m.resolved.why()}});
      } else {
        b.add(kDoesNotResolve, {{"addr", addr}, {"detail", err.detail}});
      }
    }
  }

  if (m.addr_is_local && port_ok) {
    const bool listening = m.port_listening.ok() && *m.port_listening.value();
    const std::string* bind = m.bind_test.value();
    const bool in_use = bind != nullptr && bind->starts_with("EADDRINUSE");
    const std::string ps = std::to_string(port);
    if (listening || in_use) {
      if (torchrun) {
        b.note("a socket listens on MASTER_PORT " + ps +
               ", as expected under torchrun: its agent hosts the TCPStore there");
      } else {
        const std::string where =
            listening ? m.port_listening.source() : "bind(" + first_address + ":" + ps + "): " + *bind;
        b.add(kPortInUse, {{"port", port}, {"where", where}});
      }
    } else if (bind != nullptr && *bind != "free") {
      const bool perm = bind->starts_with("EACCES") || bind->starts_with("EPERM");
      b.add(perm ? kPortPrivileged : kBindFailed, {{"port", port}, {"address", first_address}, {"bind", *bind}});
    } else if (!m.port_listening.ok() && bind == nullptr) {
      b.add(kPortStateUnknown,
            {{"port", port}, {"listening_why", m.port_listening.why()}, {"bind_why", m.bind_test.why()}});
    } else {
      b.note("MASTER_PORT " + ps + " is free on this host, the master");
    }
    if (const std::vector<int>* range = m.ephemeral_range.value(); range != nullptr && range->size() == 2) {
      const std::string* reserved_text = m.reserved_ports.value();
      const auto reserved = reserved_text != nullptr ? parse_cpu_list(*reserved_text) : std::nullopt;
      const bool reserved_here = reserved && std::binary_search(reserved->begin(), reserved->end(), port);
      if (port >= (*range)[0] && port <= (*range)[1] && !reserved_here) {
        b.add(kPortEphemeral, {{"port", port}, {"low", (*range)[0]}, {"high", (*range)[1]}});
      }
    }
  } else if (!first_address.empty()) {
    b.note("MASTER_ADDR resolves to " + first_address +
           ", not an address of this host: the port is checked on the master");
  }

  if (!first_address.empty()) {
    b.add(kResolves, {{"addr", addr},
                      {"addresses", join(*m.resolved.value(), ", ")},
                      {"this_host", part_if(m.addr_is_local, " (this host)")}});
  }
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  MASTER_ADDR and MASTER_PORT from the environment (in a job: every rank's, compared; the rest is
  judged on rank 0); getaddrinfo(MASTER_ADDR) and getaddrinfo of the
  hostname, each bounded by a deadline (DNS can block); this host's interface addresses; on the
  master (MASTER_ADDR is loopback or one of this host's addresses): the sockets in LISTEN state in
  /proc/net/tcp and /proc/net/tcp6, then a bind() with SO_REUSEADDR on MASTER_ADDR:MASTER_PORT that
  is closed at once; /proc/sys/net/ipv4/ip_local_port_range and ip_local_reserved_ports.

Failures
  SKIP     neither MASTER_ADDR nor MASTER_PORT is set.
  FAIL     one of the two is set without the other; MASTER_PORT is not a number in 1..65535.
  FAIL     MASTER_ADDR does not resolve, or did not resolve within the deadline.
  FAIL     MASTER_ADDR is loopback in a multi-node job.
  FAIL/WARN MASTER_ADDR resolves to 127.0.1.1 (the Debian/Ubuntu hostname entry in /etc/hosts):
           FAIL in a multi-node job, WARN on one node.
  FAIL     MASTER_PORT is already listening or bind() says EADDRINUSE on the master — except under
           torchrun (TORCHELASTIC_RUN_ID set), where its agent's TCPStore listens there: PASS.
  FAIL     bind() is refused (EACCES: a port below 1024 without CAP_NET_BIND_SERVICE).
  WARN     MASTER_PORT is inside the ephemeral port range and not reserved.
  FAIL     in a job: MASTER_ADDR or MASTER_PORT differ between ranks (set or unset); the ranks and hosts
           of each value are named, and the majority's value is the fix.
  UNKNOWN  MASTER_ADDR was not resolved (--sysroot of a tree that is no `preflight capture`: a
           capture holds the node's own resolution and bind test), or the port state could not be read.

Fix
  export MASTER_ADDR=<master's IP on the shared network>; export MASTER_PORT=29500
  ss -ltnp 'sport = :29500'   (who holds the port)
  sysctl -w net.ipv4.ip_local_reserved_ports=29500)";

}  // namespace

extern const CheckSpec kNetMaster = {"net.master",
                                     Scope::Job,
                                     "MASTER_ADDR resolves to a usable address and MASTER_PORT is free on the master",
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

}  // namespace net_master_check
}  // namespace preflight
