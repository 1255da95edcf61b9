// SPDX-License-Identifier: MIT
// The protocol between preflight and its contained GPU helper, preflight-gpu-probe: the
// subcommands and options of a request (the helper's argv), and the event names of the JSON Lines
// the streaming subcommands (p2p, nccl-id, nccl-allreduce) print. Both sides spell them from here
// only: the probes and the job run build requests with these, gpu_probe/gpu_probe_main.cpp parses
// them, and the helper's writers and the callers' readers name events with Event. Pure: no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace preflight::gpu_protocol {

/// The subcommands (argv[1]).
namespace command {
inline constexpr std::string_view kDriver = "driver";
inline constexpr std::string_view kHealth = "health";
inline constexpr std::string_view kSmoke = "smoke";
inline constexpr std::string_view kP2p = "p2p";
inline constexpr std::string_view kNccl = "nccl";
inline constexpr std::string_view kNcclId = "nccl-id";
inline constexpr std::string_view kNcclAllreduce = "nccl-allreduce";
inline constexpr std::string_view kHold = "hold";
}  // namespace command

/// The options, each followed by its value.
namespace option {
inline constexpr std::string_view kOrdinal = "--ordinal";
inline constexpr std::string_view kBytes = "--bytes";
inline constexpr std::string_view kMaxLoad = "--max-load";
inline constexpr std::string_view kPairTimeout = "--pair-timeout";
inline constexpr std::string_view kId = "--id";
inline constexpr std::string_view kRank = "--rank";
inline constexpr std::string_view kNranks = "--nranks";
inline constexpr std::string_view kDevice = "--device";
inline constexpr std::string_view kRepeats = "--repeats";
inline constexpr std::string_view kTimeout = "--timeout";
inline constexpr std::string_view kRoot = "--root";
inline constexpr std::string_view kLib = "--lib";
inline constexpr std::string_view kSeconds = "--seconds";
}  // namespace option

/// The events of the JSON Lines ({"event": NAME, ...}).
enum class Event {
  Start,     // p2p: a copy begins; nccl-allreduce: the communicator is being made
  Progress,  // nccl-allreduce: a step was reached ("step")
  Done,      // p2p: a copy's result; nccl-allreduce: the timed result
  Error,     // a step failed ("step"/"failed_step", "error")
  Abort,     // nccl-allreduce: the communicator was aborted after an error or the deadline
  XidWatch,  // nccl-allreduce: the XIDs NVML reported on the device meanwhile
  Id,        // nccl-id: the unique id
  End,       // the last line of every stream
};

inline constexpr std::array<std::pair<Event, std::string_view>, 8> kEventNames = {{
    {Event::Start, "start"},
    {Event::Progress, "progress"},
    {Event::Done, "done"},
    {Event::Error, "error"},
    {Event::Abort, "abort"},
    {Event::XidWatch, "xid_watch"},
    {Event::Id, "id"},
    {Event::End, "end"},
}};

constexpr std::string_view to_string(Event e) {
  for (const auto& [event, name] : kEventNames) {
    if (event == e) return name;
  }
  return {};
}

/// The event a line names; nullopt for a name the protocol does not have.
constexpr std::optional<Event> parse_event(std::string_view name) {
  for (const auto& [event, name_of] : kEventNames) {
    if (name_of == name) return event;
  }
  return std::nullopt;
}

/// A request: the subcommand, then option/value pairs, as the helper's argv after its path.
class Request {
 public:
  explicit Request(std::string_view command) { m_args.emplace_back(command); }
  Request& with(std::string_view option, std::string value) {
    m_args.emplace_back(option);
    m_args.push_back(std::move(value));
    return *this;
  }
  const std::vector<std::string>& args() const { return m_args; }

 private:
  std::vector<std::string> m_args;
};

}  // namespace preflight::gpu_protocol
