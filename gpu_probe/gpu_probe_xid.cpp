// SPDX-License-Identifier: MIT
// XIDs raised while the helper's own GPU work runs, through NVML events (gpu_probe/xid_watch.hpp).
#include "gpu_probe/xid_watch.hpp"

#include <cstdio>
#include <utility>

#include "gpu_probe/gpu_probe.hpp"

namespace preflight::helper {
namespace {

using namespace nvml;

const std::chrono::steady_clock::time_point kStart = std::chrono::steady_clock::now();

/// Waits per drain, events or not: a driver that keeps answering other event types cannot hold
/// the helper.
constexpr std::size_t kMaxWaitsPerDrain = 4 * kMaxNvmlXidEvents;

}  // namespace

std::chrono::steady_clock::time_point helper_start() { return kStart; }

double helper_seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now() - kStart).count(); }

XidWatch::XidWatch(const NvmlFunctions& nvml, std::string driver, std::string work)
    : m_fn(nvml), m_driver(std::move(driver)) {
  m_facts.work = std::move(work);
}

XidWatch::~XidWatch() {
  if (m_set != nullptr && m_free != nullptr) m_free(m_set);
}

NvmlXidWatch XidWatch::not_collected(std::string work, std::string why) {
  NvmlXidWatch w;
  w.work = std::move(work);
  w.unavailable = std::move(why);
  w.start_s = w.end_s = helper_seconds();
  return w;
}

std::string XidWatch::text(const char* call, nvmlReturn_t rc) const {
  const char* name = nvml_code_name(rc);
  std::string out = std::string(call) + ": " + (name != nullptr ? name : "nvmlReturn_t " + std::to_string(rc));
  if (const auto error_string = m_fn.nvmlErrorString) {
    if (const char* t = error_string(rc); t != nullptr && *t != '\0') out += std::string(" (") + t + ")";
  }
  return out;
}

std::string XidWatch::no_symbol(const char* call) const {
  return "driver " + (m_driver.empty() ? std::string() : m_driver + " ") + "has no " + call;
}

void XidWatch::start(const std::vector<XidDevice>& devices) {
  m_facts.start_s = m_facts.end_s = helper_seconds();
  const auto create = m_fn.nvmlEventSetCreate;
  const auto reg = m_fn.nvmlDeviceRegisterEvents;
  const auto supported = m_fn.nvmlDeviceGetSupportedEventTypes;
  m_wait = m_fn.nvmlEventSetWait_v2;
  m_wait_old = m_fn.nvmlEventSetWait;
  m_free = m_fn.nvmlEventSetFree;
  if (m_wait == nullptr) {
    m_wait = m_wait_old;  // a library older than NVML 11.0
    m_wait_name = name_nvmlEventSetWait;
    m_wait_old = nullptr;
  }
  if (create == nullptr) return void(m_facts.unavailable = no_symbol(name_nvmlEventSetCreate));
  if (reg == nullptr) return void(m_facts.unavailable = no_symbol(name_nvmlDeviceRegisterEvents));
  if (m_wait == nullptr) return void(m_facts.unavailable = no_symbol("nvmlEventSetWait_v2 or nvmlEventSetWait"));
  if (const nvmlReturn_t rc = create(&m_set); rc != NVML_SUCCESS) {
    m_set = nullptr;
    m_facts.unavailable = absent(rc) ? no_symbol(name_nvmlEventSetCreate) : text(name_nvmlEventSetCreate, rc);
    return;
  }
  for (const XidDevice& d : devices) {
    NvmlXidGpu g;
    g.index = d.index;
    g.pci_bus_id = d.bus_id;
    if (d.handle == nullptr) {
      g.why = "no NVML handle for this GPU";
      m_facts.gpus.push_back(std::move(g));
      continue;
    }
    unsigned long long types = 0;
    if (supported != nullptr && supported(d.handle, &types) == NVML_SUCCESS &&
        (types & nvmlEventTypeXidCriticalError) == 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "XID events not supported on this GPU (supported event types 0x%llx)", types);
      g.why = buf;
      m_facts.gpus.push_back(std::move(g));
      continue;
    }
    const nvmlReturn_t rc = reg(d.handle, nvmlEventTypeXidCriticalError, m_set);
    if (absent(rc)) {
      // The library has the symbol but not the function: nothing can be registered.
      m_facts.gpus.clear();
      m_facts.unavailable = no_symbol(name_nvmlDeviceRegisterEvents);
      break;
    }
    if (rc == NVML_SUCCESS) {
      g.registered = true;
      m_devices.push_back(d);
    } else if (rc == NVML_ERROR_NOT_SUPPORTED) {
      g.why = std::string(name_nvmlDeviceRegisterEvents) + ": not supported on this GPU";
    } else {
      g.why = text(name_nvmlDeviceRegisterEvents, rc);
    }
    m_facts.gpus.push_back(std::move(g));
  }
  if (m_devices.empty()) {
    if (m_facts.unavailable.empty()) {
      m_facts.unavailable = "no GPU accepted the registration for XID events";
      if (m_facts.gpus.size() == 1) m_facts.unavailable += " (" + m_facts.gpus.front().why + ")";
    }
    if (m_free != nullptr) m_free(m_set);
    m_set = nullptr;
    return;
  }
  m_waiting = true;
  m_facts.start_s = helper_seconds();
}

void XidWatch::drain() {
  if (!m_waiting) return;
  for (std::size_t waits = 0; waits < kMaxWaitsPerDrain; ++waits) {
    if (m_facts.events.size() >= kMaxNvmlXidEvents) {
      m_facts.truncated = true;
      return;
    }
    nvmlEventData_t data{};
    data.gpuInstanceId = data.computeInstanceId = NVML_INSTANCE_ID_NONE;  // the old wait leaves them
    nvmlReturn_t rc = m_wait(m_set, &data, 0);
    if (absent(rc) && m_wait_old != nullptr) {
      m_wait = m_wait_old;  // exported but not implemented: the old entry point
      m_wait_name = name_nvmlEventSetWait;
      m_wait_old = nullptr;
      rc = m_wait(m_set, &data, 0);
    }
    if (rc == NVML_ERROR_TIMEOUT) return;  // nothing pending
    if (rc != NVML_SUCCESS) {
      // The rest of the window cannot be read: what was read stands, the window is not complete.
      m_facts.unavailable = absent(rc) ? no_symbol(m_wait_name) : text(m_wait_name, rc);
      m_waiting = false;
      return;
    }
    if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    NvmlXidEvent e;
    e.xid = data.eventData;
    e.seconds = helper_seconds();
    for (const XidDevice& d : m_devices) {
      if (d.handle == data.device) {
        e.gpu = d.index;
        e.pci_bus_id = d.bus_id;
        break;
      }
    }
    if (data.gpuInstanceId != NVML_INSTANCE_ID_NONE) e.gpu_instance = data.gpuInstanceId;
    if (data.computeInstanceId != NVML_INSTANCE_ID_NONE) e.compute_instance = data.computeInstanceId;
    m_facts.events.push_back(std::move(e));
  }
}

NvmlXidWatch XidWatch::finish() {
  if (m_finished) return m_facts;
  m_finished = true;
  const bool started = m_waiting;
  drain();
  m_facts.collected = started && m_facts.unavailable.empty();
  if (m_set != nullptr && m_free != nullptr) m_free(m_set);
  m_set = nullptr;
  m_waiting = false;
  m_facts.end_s = helper_seconds();
  return m_facts;
}

}  // namespace preflight::helper
