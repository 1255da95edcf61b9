// SPDX-License-Identifier: MIT
// tests/fakes/scenario.hpp: the scenario format of the fake NVIDIA libraries, and the driver's
// CUDA_VISIBLE_DEVICES rules.
#include "tests/fakes/scenario.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace preflight::fake_gpu {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

bool parse_int(std::string_view text, long long& out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc{} && ptr == end;
}

void check_keys(const json& object, const std::string& where, std::initializer_list<const char*> allowed) {
  if (!object.is_object()) fail(where + ": expected an object");
  for (const auto& item : object.items()) {
    const bool known = std::any_of(allowed.begin(), allowed.end(), [&](const char* k) { return item.key() == k; });
    if (!known) {
      std::string list;
      for (const char* k : allowed) list += std::string(list.empty() ? "" : ", ") + k;
      fail(where + ": unknown key '" + item.key() + "' (known: " + list + ")");
    }
  }
}

std::string get_string(const json& object, const char* key, const std::string& where) {
  const json& v = object.at(key);
  if (!v.is_string()) fail(where + "." + key + ": expected a string");
  return v.get<std::string>();
}

long long get_int(const json& object, const char* key, const std::string& where, long long min) {
  const json& v = object.at(key);
  if (!v.is_number_integer()) fail(where + "." + key + ": expected an integer");
  const long long n = v.get<long long>();
  if (n < min) fail(where + "." + key + ": must be >= " + std::to_string(min));
  return n;
}

bool get_bool(const json& object, const char* key, const std::string& where) {
  const json& v = object.at(key);
  if (!v.is_boolean()) fail(where + "." + key + ": expected true or false");
  return v.get<bool>();
}

/// Typical products per compute capability, for GPUs that give only "cc".
struct Product {
  int cc_major, cc_minor;
  const char* name;
  std::uint64_t memory_mib;
  unsigned int pci_device_id;
};
constexpr Product kProducts[] = {
    {9, 0, "NVIDIA H100 80GB HBM3", 81559, 0x233010DE},
    {8, 0, "NVIDIA A100-SXM4-80GB", 81920, 0x20B210DE},
    {7, 0, "Tesla V100-SXM2-32GB", 32768, 0x1DB510DE},
    {7, 5, "Tesla T4", 15360, 0x1EB810DE},
    {8, 6, "NVIDIA A10", 23028, 0x223610DE},
    {8, 9, "NVIDIA L40S", 46068, 0x26B910DE},
    {10, 0, "NVIDIA B200", 183359, 0x290110DE},
    {6, 0, "Tesla P100-SXM2-16GB", 16384, 0x15F910DE},
};

const Product* product_for(int major, int minor) {
  for (const Product& p : kProducts)
    if (p.cc_major == major && p.cc_minor == minor) return &p;
  return nullptr;
}

/// The bus ids of a DGX H100's GPUs; later GPUs get made-up ones.
std::string default_pci_bus_id(std::size_t index) {
  static constexpr unsigned kBuses[] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
  const unsigned bus = index < 8 ? kBuses[index] : static_cast<unsigned>(0xe0 + index - 8) & 0xffu;
  char buf[32];
  std::snprintf(buf, sizeof buf, "00000000:%02X:00.0", bus);
  return buf;
}

/// Distinct from the first hex digit on for the first 16 GPUs, so "GPU-<1 digit>" selects one.
std::string default_uuid(std::size_t index) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-%x%x1b2c3d-4e5f-6071-8293-a4b5c6d7e8%02x",
                static_cast<unsigned>(index + 1) & 0xfu, static_cast<unsigned>(index) & 0xfu,
                static_cast<unsigned>(index) & 0xffu);
  return buf;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" → 16 bytes.
bool parse_uuid(const std::string& uuid, std::array<unsigned char, 16>& bytes) {
  if (uuid.size() != 40 || uuid.compare(0, 4, "GPU-") != 0) return false;
  std::size_t b = 0;
  for (std::size_t i = 4; i < uuid.size();) {
    if (i == 12 || i == 17 || i == 22 || i == 27) {
      if (uuid[i] != '-') return false;
      ++i;
      continue;
    }
    const int hi = hex_value(uuid[i]);
    const int lo = hex_value(uuid[i + 1]);
    if (hi < 0 || lo < 0 || b >= 16) return false;
    bytes[b++] = static_cast<unsigned char>(hi * 16 + lo);
    i += 2;
  }
  return b == 16;
}

/// "00000000:18:00.0" (or the legacy "0000:18:00.0") → its parts; normalised to NVML's spelling.
bool parse_pci(Gpu& gpu) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  if (std::sscanf(gpu.pci_bus_id.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4) return false;
  if (bus > 0xff || device > 0x1f || function > 7) return false;
  gpu.pci_domain = domain;
  gpu.pci_bus = bus;
  gpu.pci_device = device;
  gpu.pci_function = function;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.%X", domain, bus, device, function);
  gpu.pci_bus_id = buf;
  return true;
}

void finish_gpu(Gpu& gpu, const std::string& where) {
  if (!parse_uuid(gpu.uuid, gpu.uuid_bytes))
    fail(where + ".uuid: '" + gpu.uuid + "' is not GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
  if (!parse_pci(gpu)) fail(where + ".pci_bus_id: '" + gpu.pci_bus_id + "' is not like 00000000:18:00.0");
  if (gpu.memory_used_mib > gpu.memory_total_mib) fail(where + ": memory_used_mib exceeds memory_total_mib");
}

/// "0-31,64-95" → the CPUs; throws naming `where`.
std::vector<int> parse_cpulist(const std::string& text, const std::string& where) {
  std::vector<int> cpus;
  std::size_t start = 0;
  if (text.empty()) return cpus;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    long long lo = 0, hi = 0;
    const bool good = dash == std::string::npos ? parse_int(item, lo) && (hi = lo, true)
                                                : parse_int(std::string_view(item).substr(0, dash), lo) &&
                                                      parse_int(std::string_view(item).substr(dash + 1), hi);
    if (!good || lo < 0 || hi < lo || hi > 65535)
      fail(where + ": '" + text + "' is not a CPU list like \"0-31,64-95\"");
    for (long long c = lo; c <= hi; ++c) cpus.push_back(static_cast<int>(c));
    start = comma + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string get_label(const json& v, const std::string& where, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* k : allowed) {
    if (v.is_string() && v.get<std::string>() == k) return k;
    list += std::string(list.empty() ? "" : ", ") + k;
  }
  fail(where + ": expected one of " + list);
}

void parse_p2p_status(const json& doc, P2pStatus& st, const std::string& where) {
  if (doc.contains("read"))
    st.read = get_label(doc.at("read"), where + ".read", {"OK", "CNS", "GNS", "TNS", "DR", "NS", "U"});
  if (doc.contains("write"))
    st.write = get_label(doc.at("write"), where + ".write", {"OK", "CNS", "GNS", "TNS", "DR", "NS", "U"});
  if (doc.contains("nvlink"))
    st.nvlink = get_label(doc.at("nvlink"), where + ".nvlink", {"OK", "CNS", "GNS", "TNS", "DR", "NS", "U"});
}

Gpu default_gpu(std::size_t index) {
  Gpu gpu;
  gpu.name = kProducts[0].name;
  gpu.uuid = default_uuid(index);
  gpu.pci_bus_id = default_pci_bus_id(index);
  gpu.mig = false;
  gpu.nvlinks = 18;  // an HGX H100 board: 18 NVLinks to the NVSwitches
  finish_gpu(gpu, "gpus[" + std::to_string(index) + "]");
  return gpu;
}

void parse_health(const json& doc, const std::string& where, GpuHealthScript& h) {
  check_keys(doc, where,
             {"lost",
              "remap_correctable",
              "remap_uncorrectable",
              "remap_banks_exhausted",
              "remap_pending",
              "remap_failure",
              "retired_pending",
              "retired_dbe",
              "retired_sbe",
              "ecc",
              "ecc_pending",
              "ecc_dbe_volatile",
              "ecc_dbe_aggregate",
              "ecc_sbe_volatile",
              "recovery_action",
              "clock_event_reasons",
              "pstate",
              "temperature",
              "slowdown_temperature",
              "pcie_gen",
              "pcie_width",
              "pcie_gen_max",
              "pcie_width_max",
              "pcie_gen_gpu_max",
              "pcie_replay",
              "pcie_replay_rise",
              "nvlink_replay_rise",
              "nvlink_crc_rise",
              "fabric_state",
              "fabric_status",
              "fabric_health_mask",
              "fabric_health_summary",
              "fabric_clique_id"});
  auto u = [&](const char* key, unsigned& out) {
    if (doc.contains(key)) out = static_cast<unsigned>(get_int(doc, key, where, 0));
  };
  auto u64 = [&](const char* key, std::uint64_t& out) {
    if (doc.contains(key)) out = static_cast<std::uint64_t>(get_int(doc, key, where, 0));
  };
  auto i = [&](const char* key, int& out) {
    if (doc.contains(key)) out = static_cast<int>(get_int(doc, key, where, 0));
  };
  auto b = [&](const char* key, bool& out) {
    if (doc.contains(key)) out = get_bool(doc, key, where);
  };
  if (doc.contains("lost")) {
    const std::string lost = get_string(doc, "lost", where);
    if (lost == "gpu_lost")
      h.lost = 15;
    else if (lost == "reset_required")
      h.lost = 16;
    else
      fail(where + ".lost: expected \"gpu_lost\" or \"reset_required\"");
  }
  u("remap_correctable", h.remap_correctable);
  u("remap_uncorrectable", h.remap_uncorrectable);
  u("remap_banks_exhausted", h.remap_banks_exhausted);
  b("remap_pending", h.remap_pending);
  b("remap_failure", h.remap_failure);
  b("retired_pending", h.retired_pending);
  u("retired_dbe", h.retired_dbe);
  u("retired_sbe", h.retired_sbe);
  b("ecc", h.ecc);
  if (doc.contains("ecc_pending")) h.ecc_pending = get_bool(doc, "ecc_pending", where);
  u64("ecc_dbe_volatile", h.ecc_dbe_volatile);
  u64("ecc_dbe_aggregate", h.ecc_dbe_aggregate);
  u64("ecc_sbe_volatile", h.ecc_sbe_volatile);
  i("recovery_action", h.recovery_action);
  u64("clock_event_reasons", h.clock_event_reasons);
  i("pstate", h.pstate);
  i("temperature", h.temperature);
  i("slowdown_temperature", h.slowdown_temperature);
  i("pcie_gen", h.pcie_gen);
  i("pcie_width", h.pcie_width);
  i("pcie_gen_max", h.pcie_gen_max);
  i("pcie_width_max", h.pcie_width_max);
  i("pcie_gen_gpu_max", h.pcie_gen_gpu_max);
  u("pcie_replay", h.pcie_replay);
  u("pcie_replay_rise", h.pcie_replay_rise);
  u64("nvlink_replay_rise", h.nvlink_replay_rise);
  u64("nvlink_crc_rise", h.nvlink_crc_rise);
  if (doc.contains("fabric_state")) {
    const std::string st = get_string(doc, "fabric_state", where);
    if (st == "not_supported")
      h.fabric_state = 0;
    else if (st == "not_started")
      h.fabric_state = 1;
    else if (st == "in_progress")
      h.fabric_state = 2;
    else if (st == "completed")
      h.fabric_state = 3;
    else
      fail(where + ".fabric_state: expected not_supported, not_started, in_progress or completed");
  }
  i("fabric_status", h.fabric_status);
  u("fabric_health_mask", h.fabric_health_mask);
  i("fabric_health_summary", h.fabric_health_summary);
  u("fabric_clique_id", h.fabric_clique_id);
}

Gpu parse_gpu(const json& doc, std::size_t index) {
  const std::string where = "gpus[" + std::to_string(index) + "]";
  check_keys(doc, where,
             {"name", "uuid", "pci_bus_id", "cc", "memory_total_mib", "memory_used_mib", "persistence", "mig",
              "processes", "cpu_affinity", "numa_node", "nvlinks", "nvlink_remote", "health", "events", "lost"});
  Gpu gpu = default_gpu(index);
  const Product* product = &kProducts[0];
  if (doc.contains("cc")) {
    const std::string cc = get_string(doc, "cc", where);
    const auto dot = cc.find('.');
    long long major = 0, minor = 0;
    if (dot == std::string::npos || !parse_int(std::string_view(cc).substr(0, dot), major) ||
        !parse_int(std::string_view(cc).substr(dot + 1), minor) || major < 1 || minor < 0 || minor > 9)
      fail(where + ".cc: '" + cc + "' is not like \"9.0\"");
    gpu.cc_major = static_cast<int>(major);
    gpu.cc_minor = static_cast<int>(minor);
    product = product_for(gpu.cc_major, gpu.cc_minor);
    if (gpu.cc_major != 9 || gpu.cc_minor != 0) gpu.nvlinks = 0;
    if (product != nullptr) {
      gpu.name = product->name;
      gpu.memory_total_mib = product->memory_mib;
      gpu.pci_device_id = product->pci_device_id;
      gpu.mig = gpu.cc_major * 10 + gpu.cc_minor >= 80 ? std::optional<bool>(false) : std::nullopt;
    } else {
      gpu.name = "NVIDIA Fake GPU sm_" + std::to_string(major) + std::to_string(minor);
    }
  }
  if (doc.contains("name")) gpu.name = get_string(doc, "name", where);
  if (doc.contains("uuid")) gpu.uuid = get_string(doc, "uuid", where);
  if (doc.contains("pci_bus_id")) gpu.pci_bus_id = get_string(doc, "pci_bus_id", where);
  if (doc.contains("memory_total_mib"))
    gpu.memory_total_mib = static_cast<std::uint64_t>(get_int(doc, "memory_total_mib", where, 1));
  if (doc.contains("persistence")) gpu.persistence = get_bool(doc, "persistence", where);
  if (doc.contains("mig")) {
    if (doc.at("mig").is_null())
      gpu.mig = std::nullopt;
    else
      gpu.mig = get_bool(doc, "mig", where);
  }
  std::uint64_t process_mib = 0;
  if (doc.contains("processes")) {
    const json& list = doc.at("processes");
    if (!list.is_array()) fail(where + ".processes: expected an array");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string pwhere = where + ".processes[" + std::to_string(i) + "]";
      check_keys(list[i], pwhere, {"pid", "used_mib"});
      Process p;
      p.pid = static_cast<unsigned int>(get_int(list[i], "pid", pwhere, 1));
      p.used_mib =
          list[i].contains("used_mib") ? static_cast<std::uint64_t>(get_int(list[i], "used_mib", pwhere, 0)) : 0;
      process_mib += p.used_mib;
      gpu.processes.push_back(p);
    }
  }
  if (doc.contains("cpu_affinity"))
    gpu.cpu_affinity = parse_cpulist(get_string(doc, "cpu_affinity", where), where + ".cpu_affinity");
  if (doc.contains("numa_node")) gpu.numa_node = static_cast<int>(get_int(doc, "numa_node", where, 0));
  if (doc.contains("nvlinks")) {
    gpu.nvlinks = static_cast<int>(get_int(doc, "nvlinks", where, 0));
    if (gpu.nvlinks > 18) fail(where + ".nvlinks: at most 18");
  }
  if (doc.contains("nvlink_remote")) {
    const std::string remote = get_string(doc, "nvlink_remote", where);
    if (remote != "switch" && remote != "peer") fail(where + ".nvlink_remote: expected \"switch\" or \"peer\"");
    gpu.nvlink_to_switch = remote == "switch";
  }
  if (doc.contains("health")) parse_health(doc.at("health"), where + ".health", gpu.health);
  if (doc.contains("lost")) {
    const std::string lost = get_label(doc.at("lost"), where + ".lost", {"gpu_lost", "reset_required"});
    gpu.lost = lost == "gpu_lost" ? 15 : 16;
    gpu.health.lost = gpu.lost;
    gpu.cuda_visible = false;
  }
  if (doc.contains("events")) {
    const std::string e =
        get_label(doc.at("events"), where + ".events", {"supported", "not_supported", "no_permission"});
    gpu.events = e == "not_supported"   ? Gpu::Events::NotSupported
                 : e == "no_permission" ? Gpu::Events::NoPermission
                                        : Gpu::Events::Supported;
  }
  gpu.memory_used_mib = doc.contains("memory_used_mib")
                            ? static_cast<std::uint64_t>(get_int(doc, "memory_used_mib", where, 0))
                            : process_mib;
  finish_gpu(gpu, where);
  return gpu;
}

constexpr const char* kFaultKeys[] = {"cuInit", "nvmlInit", "ctx", "alloc", "memset", "copy"};

Fault* fault_slot(Scenario& s, std::string_view key) {
  if (key == "cuInit") return &s.cu_init;
  if (key == "nvmlInit") return &s.nvml_init;
  if (key == "ctx") return &s.ctx;
  if (key == "alloc") return &s.alloc;
  if (key == "memset") return &s.memset;
  if (key == "copy") return &s.copy;
  return nullptr;
}

void set_fault(Scenario& s, const std::string& key, const json& value, const std::string& where) {
  if (!value.is_string()) fail(where + ": expected a string like \"ok\", \"error:100\", \"segv\", \"hang\"");
  try {
    *fault_slot(s, key) = parse_fault(value.get<std::string>(), key == "copy");
  } catch (const std::invalid_argument& e) {
    fail(where + ": " + e.what());
  }
}

}  // namespace

Fault parse_fault(std::string_view text, bool allow_corrupt) {
  if (text == "ok") return {};
  if (text == "segv") return {Fault::Kind::Segv, 0};
  if (text == "hang") return {Fault::Kind::Hang, 0};
  if (text == "corrupt" && allow_corrupt) return {Fault::Kind::Corrupt, 0};
  long long code = 0;
  if (text.substr(0, 6) == "error:" && parse_int(text.substr(6), code) && code > 0 && code < 100000)
    return {Fault::Kind::Error, static_cast<int>(code)};
  throw std::invalid_argument("'" + std::string(text) + "' is not ok | error:N | segv | hang" +
                              (allow_corrupt ? " | corrupt" : ""));
}

void enact(const Fault& fault) {
  if (fault.kind == Fault::Kind::Segv) {
    // The default action whatever the host installed (a sanitizer's handler would turn the crash
    // into an exit status), and unblocked, so the process dies of the signal as with a real crash.
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(SIGSEGV, &action, nullptr);
    sigset_t set;
    ::sigemptyset(&set);
    ::sigaddset(&set, SIGSEGV);
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(SIGSEGV);
    std::abort();  // not reached
  }
  if (fault.kind == Fault::Kind::Hang) {
    for (;;) ::pause();
  }
}

Scenario default_scenario() {
  Scenario s;
  for (std::size_t i = 0; i < 8; ++i) s.gpus.push_back(default_gpu(i));
  return s;
}

Scenario parse_scenario(const json& doc) {
  check_keys(doc, "scenario",
             {"description",
              "driver_version",
              "cuda_driver_version",
              "nccl_version",
              "gpus",
              "nvml_only_gpus",
              "faults",
              "cuInit",
              "nvmlInit",
              "ctx",
              "alloc",
              "memset",
              "copy",
              "topology",
              "p2p",
              "peer_access",
              "peer_copy_faults",
              "nvml_missing",
              "allreduce",
              "xid_events"});
  Scenario s = default_scenario();
  s.source = "inline";
  if (doc.contains("description") && !doc.at("description").is_string()) fail("description: expected a string");
  if (doc.contains("driver_version")) {
    s.driver_version = get_string(doc, "driver_version", "scenario");
    if (s.driver_version.empty()) fail("driver_version: empty");
  }
  if (doc.contains("cuda_driver_version"))
    s.cuda_driver_version = static_cast<int>(get_int(doc, "cuda_driver_version", "scenario", 1000));
  if (doc.contains("nccl_version")) s.nccl_version = static_cast<int>(get_int(doc, "nccl_version", "scenario", 1));
  if (doc.contains("gpus")) {
    const json& gpus = doc.at("gpus");
    s.gpus.clear();
    if (gpus.is_number_integer()) {
      const long long n = gpus.get<long long>();
      if (n < 0 || n > 64) fail("gpus: a count must be 0..64");
      for (long long i = 0; i < n; ++i) s.gpus.push_back(default_gpu(static_cast<std::size_t>(i)));
    } else if (gpus.is_array()) {
      for (std::size_t i = 0; i < gpus.size(); ++i) s.gpus.push_back(parse_gpu(gpus[i], i));
    } else {
      fail("gpus: expected an array of GPUs or a count");
    }
  }
  std::set<std::string> uuids, buses;
  for (const Gpu& g : s.gpus) {
    if (!uuids.insert(g.uuid).second) fail("gpus: duplicate uuid " + g.uuid);
    if (!buses.insert(g.pci_bus_id).second) fail("gpus: duplicate pci_bus_id " + g.pci_bus_id);
  }
  if (doc.contains("nvml_only_gpus")) {
    const json& list = doc.at("nvml_only_gpus");
    if (!list.is_array()) fail("nvml_only_gpus: expected an array of GPU indices");
    for (const json& v : list) {
      if (!v.is_number_integer() || v.get<long long>() < 0 ||
          v.get<long long>() >= static_cast<long long>(s.gpus.size()))
        fail("nvml_only_gpus: " + v.dump() + " is not an index into gpus");
      Gpu& g = s.gpus[v.get<std::size_t>()];
      if (!g.cuda_visible) fail("nvml_only_gpus: duplicate index " + v.dump());
      g.cuda_visible = false;
    }
  }
  if (doc.contains("faults")) {
    const json& faults = doc.at("faults");
    check_keys(faults, "faults", {"cuInit", "nvmlInit", "ctx", "alloc", "memset", "copy"});
    for (const auto& item : faults.items()) set_fault(s, item.key(), item.value(), "faults." + item.key());
  }
  for (const char* key : kFaultKeys)
    if (doc.contains(key)) set_fault(s, key, doc.at(key), key);
  const std::size_t n = s.gpus.size();
  auto gpu_index = [&](const json& v, const std::string& where) {
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() >= static_cast<long long>(n))
      fail(where + ": " + v.dump() + " is not an index into gpus");
    return v.get<std::size_t>();
  };
  if (doc.contains("allreduce")) {
    const json& ar = doc.at("allreduce");
    check_keys(ar, "allreduce", {"fault", "rank", "busbw_gbps", "error_code"});
    if (ar.contains("fault")) {
      const std::string f = get_label(ar.at("fault"), "allreduce.fault",
                                      {"ok", "hang_init", "hang", "corrupt", "async_error", "init_error"});
      using F = AllreduceScript::Fault;
      s.allreduce.fault = f == "hang_init"     ? F::HangInit
                          : f == "hang"        ? F::Hang
                          : f == "corrupt"     ? F::Corrupt
                          : f == "async_error" ? F::AsyncError
                          : f == "init_error"  ? F::InitError
                                               : F::Ok;
    }
    if (ar.contains("rank")) s.allreduce.rank = static_cast<int>(get_int(ar, "rank", "allreduce", 0));
    if (ar.contains("busbw_gbps")) {
      const json& v = ar.at("busbw_gbps");
      if (!v.is_number() || !(v.get<double>() > 0)) fail("allreduce.busbw_gbps: expected a number > 0");
      s.allreduce.busbw_gbps = v.get<double>();
    }
    if (ar.contains("error_code")) {
      s.allreduce.error_code = static_cast<int>(get_int(ar, "error_code", "allreduce", 1));
      if (s.allreduce.error_code == 7) fail("allreduce.error_code: 7 is ncclInProgress, not an error");
    }
  }
  if (doc.contains("topology")) {
    const json& rows = doc.at("topology");
    if (!rows.is_array() || rows.size() != n) fail("topology: expected " + std::to_string(n) + " rows (one per GPU)");
    for (std::size_t a = 0; a < n; ++a) {
      const std::string where = "topology[" + std::to_string(a) + "]";
      if (!rows[a].is_array() || rows[a].size() != n) fail(where + ": expected " + std::to_string(n) + " labels");
      std::vector<std::string> row;
      for (std::size_t b = 0; b < n; ++b)
        row.push_back(
            get_label(rows[a][b], where + "[" + std::to_string(b) + "]", {"X", "PIX", "PXB", "PHB", "NODE", "SYS"}));
      s.topology.push_back(std::move(row));
    }
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = 0; b < n; ++b)
        if ((a == b) != (s.topology[a][b] == "X") || s.topology[a][b] != s.topology[b][a])
          fail("topology: must be symmetric with \"X\" exactly on the diagonal");
  }
  if (doc.contains("p2p")) {
    const json& p2p = doc.at("p2p");
    check_keys(p2p, "p2p", {"read", "write", "nvlink", "pairs"});
    parse_p2p_status(p2p, s.p2p, "p2p");
    if (p2p.contains("pairs")) {
      const json& pairs = p2p.at("pairs");
      if (!pairs.is_array()) fail("p2p.pairs: expected an array");
      for (std::size_t i = 0; i < pairs.size(); ++i) {
        const std::string where = "p2p.pairs[" + std::to_string(i) + "]";
        check_keys(pairs[i], where, {"a", "b", "read", "write", "nvlink"});
        if (!pairs[i].contains("a") || !pairs[i].contains("b")) fail(where + ": needs \"a\" and \"b\"");
        const std::size_t a = gpu_index(pairs[i].at("a"), where + ".a");
        const std::size_t b = gpu_index(pairs[i].at("b"), where + ".b");
        if (a == b) fail(where + ": a and b must differ");
        P2pStatus st = s.p2p;
        parse_p2p_status(pairs[i], st, where);
        s.p2p_pairs.push_back({{std::min(a, b), std::max(a, b)}, st});
      }
    }
  }
  if (doc.contains("peer_access")) s.peer_access = get_bool(doc, "peer_access", "scenario");
  if (doc.contains("peer_copy_faults")) {
    const json& list = doc.at("peer_copy_faults");
    if (!list.is_array()) fail("peer_copy_faults: expected an array");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = "peer_copy_faults[" + std::to_string(i) + "]";
      check_keys(list[i], where, {"src", "dst", "fault", "step"});
      if (!list[i].contains("src") || !list[i].contains("dst") || !list[i].contains("fault"))
        fail(where + ": needs \"src\", \"dst\" and \"fault\"");
      PeerCopyFault f;
      f.src = gpu_index(list[i].at("src"), where + ".src");
      f.dst = gpu_index(list[i].at("dst"), where + ".dst");
      if (f.src == f.dst) fail(where + ": src and dst must differ");
      const std::string fault = get_string(list[i], "fault", where);
      long long code = 0;
      if (fault == "hang")
        f.kind = PeerCopyFault::Kind::Hang;
      else if (fault == "block")
        f.kind = PeerCopyFault::Kind::Block;
      else if (fault == "segv")
        f.kind = PeerCopyFault::Kind::Segv;
      else if (fault == "corrupt")
        f.kind = PeerCopyFault::Kind::Corrupt;
      else if (fault == "slow")
        f.kind = PeerCopyFault::Kind::Slow;
      else if (fault.rfind("error:", 0) == 0 && parse_int(std::string_view(fault).substr(6), code) && code > 0 &&
               code < 100000) {
        f.kind = PeerCopyFault::Kind::Error;
        f.code = static_cast<int>(code);
      } else {
        fail(where + ".fault: '" + fault + "' is not hang | block | segv | corrupt | slow | error:N");
      }
      if (list[i].contains("step")) {
        const std::string step = get_string(list[i], "step", where);
        if (step == "enable")
          f.step = PeerCopyFault::Step::Enable;
        else if (step != "copy")
          fail(where + ".step: expected \"copy\" or \"enable\"");
      }
      if (f.step == PeerCopyFault::Step::Enable && f.kind != PeerCopyFault::Kind::Error)
        fail(where + ": step \"enable\" takes only error:N");
      s.peer_copy_faults.push_back(f);
    }
  }
  if (doc.contains("xid_events")) {
    const json& list = doc.at("xid_events");
    if (!list.is_array()) fail("xid_events: expected an array of {\"gpu\": N, \"xid\": X}");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = "xid_events[" + std::to_string(i) + "]";
      check_keys(list[i], where, {"gpu", "xid", "gpu_instance", "compute_instance", "during"});
      if (!list[i].contains("gpu") || !list[i].contains("xid")) fail(where + ": needs \"gpu\" and \"xid\"");
      XidEventScript e;
      e.gpu = gpu_index(list[i].at("gpu"), where + ".gpu");
      e.xid = static_cast<unsigned long long>(get_int(list[i], "xid", where, 1));
      if (list[i].contains("gpu_instance"))
        e.gpu_instance = static_cast<unsigned>(get_int(list[i], "gpu_instance", where, 0));
      if (list[i].contains("compute_instance"))
        e.compute_instance = static_cast<unsigned>(get_int(list[i], "compute_instance", where, 0));
      if (list[i].contains("during")) {
        if (list[i].at("during") != "nccl") fail(where + ".during: expected \"nccl\"");
        e.during_nccl = true;
      }
      s.xid_events.push_back(e);
    }
  }
  if (doc.contains("nvml_missing")) {
    const json& list = doc.at("nvml_missing");
    if (!list.is_array()) fail("nvml_missing: expected an array of NVML function names");
    for (const json& v : list) {
      if (!v.is_string()) fail("nvml_missing: expected strings");
      s.nvml_missing.push_back(v.get<std::string>());
    }
  }
  return s;
}

std::string nvswitch_bus_id(int link) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "00000000:%02X:00.0", 0xF0 + (link % 4));
  return buf;
}

std::string Scenario::path(std::size_t a, std::size_t b) const {
  if (a == b) return "X";
  if (a < topology.size() && b < topology[a].size()) return topology[a][b];
  const std::size_t half = (gpus.size() + 1) / 2;
  return (a < half) == (b < half) ? "NODE" : "SYS";
}

P2pStatus Scenario::p2p_status(std::size_t a, std::size_t b) const {
  P2pStatus st = p2p;
  for (const auto& [pair, status] : p2p_pairs)
    if (pair.first == std::min(a, b) && pair.second == std::max(a, b)) st = status;
  if (st.nvlink.empty()) {
    const bool linked = a < gpus.size() && b < gpus.size() && gpus[a].nvlinks > 0 && gpus[b].nvlinks > 0;
    st.nvlink = linked ? "OK" : "NS";
  }
  return st;
}

bool Scenario::can_access_peer(std::size_t a, std::size_t b) const {
  if (a == b) return false;
  if (peer_access) return *peer_access;
  return p2p_status(a, b).read == "OK";
}

double Scenario::peer_gbps(std::size_t src, std::size_t dst) const {
  if (src < gpus.size() && dst < gpus.size() && gpus[src].nvlinks > 0 && gpus[dst].nvlinks > 0)
    return 20.0 * std::min(gpus[src].nvlinks, gpus[dst].nvlinks);
  const std::string p = path(src, dst);
  if (p == "PIX" || p == "PXB") return 24.0;
  if (p == "PHB" || p == "NODE") return 20.0;
  return 10.0;
}

const PeerCopyFault* Scenario::peer_copy_fault(std::size_t src, std::size_t dst) const {
  for (const PeerCopyFault& f : peer_copy_faults)
    if (f.src == src && f.dst == dst) return &f;
  return nullptr;
}

bool Scenario::nvml_function_missing(std::string_view name) const {
  return std::find(nvml_missing.begin(), nvml_missing.end(), name) != nvml_missing.end();
}

Scenario load_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  try {
    Scenario s = parse_scenario(json::parse(text.str()));
    s.source = path;
    return s;
  } catch (const json::exception& e) {
    throw std::invalid_argument(path + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

LoadedScenario load_scenario_from_env() {
  LoadedScenario loaded;
  const char* path = std::getenv("PREFLIGHT_FAKE_GPU");
  if (path == nullptr || *path == '\0') {
    loaded.scenario = default_scenario();
    return loaded;
  }
  try {
    loaded.scenario = load_scenario_file(path);
  } catch (const std::exception& e) {
    loaded.scenario = default_scenario();
    loaded.error = std::string("PREFLIGHT_FAKE_GPU: ") + e.what();
  }
  return loaded;
}

std::vector<std::size_t> cuda_visible_gpus(const Scenario& scenario, const char* cuda_visible_devices) {
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < scenario.gpus.size(); ++i)
    if (scenario.gpus[i].cuda_visible) all.push_back(i);
  if (cuda_visible_devices == nullptr) return all;

  std::vector<std::size_t> visible;
  const std::string_view list(cuda_visible_devices);
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    std::string_view entry = list.substr(start, comma - start);
    while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.front()))) entry.remove_prefix(1);
    while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.back()))) entry.remove_suffix(1);
    std::optional<std::size_t> chosen;
    if (entry.size() > 4 && entry.substr(0, 4) == "GPU-") {
      for (std::size_t gi : all) {
        const std::string& uuid = scenario.gpus[gi].uuid;
        if (uuid.size() < entry.size()) continue;
        bool match = true;
        for (std::size_t k = 0; k < entry.size() && match; ++k)
          match =
              std::tolower(static_cast<unsigned char>(uuid[k])) == std::tolower(static_cast<unsigned char>(entry[k]));
        if (!match) continue;
        if (chosen) {  // ambiguous prefix
          chosen.reset();
          break;
        }
        chosen = gi;
      }
    } else {
      long long ordinal = -1;
      if (parse_int(entry, ordinal) && ordinal >= 0 && ordinal < static_cast<long long>(all.size()))
        chosen = all[static_cast<std::size_t>(ordinal)];
    }
    if (!chosen || std::find(visible.begin(), visible.end(), *chosen) != visible.end()) break;
    visible.push_back(*chosen);
    start = comma + 1;
  }
  return visible;
}

}  // namespace preflight::fake_gpu
