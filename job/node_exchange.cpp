// SPDX-License-Identifier: MIT
#include "job/node_exchange.hpp"

#include <map>

namespace preflight {
namespace {

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

std::string visible_devices_record(const std::string& host, int local_rank, const std::optional<std::string>& cvd) {
  nlohmann::json mine = {{"host", host}, {"local_rank", local_rank}};
  mine["cvd"] = cvd ? nlohmann::json(*cvd) : nlohmann::json();
  std::string record = dump(mine);
  if (record.size() > kVisibleDevicesRecordBytes) {
    mine["cvd"] = "?";  // too long to exchange: the union cannot be formed from it
    mine["too_long"] = true;
    record = dump(mine);
  }
  record.resize(kVisibleDevicesRecordBytes, ' ');
  return record;
}

std::string visible_devices_table(const std::vector<std::string>& records, const nlohmann::json& watch_offer) {
  std::map<std::string, std::map<int, nlohmann::json>> by_host;  // host -> values by local rank
  bool usable = true;
  for (const std::string& r : records) {
    const nlohmann::json j = nlohmann::json::parse(r, nullptr, false);
    if (!j.is_object() || j.value("too_long", false)) {
      usable = false;
      continue;
    }
    by_host[j.value("host", "")][j.value("local_rank", 0)] = j.contains("cvd") ? j["cvd"] : nlohmann::json();
  }
  nlohmann::json hosts = nlohmann::json::object();
  for (const auto& [h, values] : by_host) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [lr, v] : values) list.push_back(v);
    hosts[h] = std::move(list);
  }
  nlohmann::json message = {{"hosts", usable ? hosts : nlohmann::json()}};
  if (!watch_offer.is_null()) message["watch"] = watch_offer;
  return dump(message);
}

std::optional<NodeVisibleDevices> visible_devices_of(const nlohmann::json& table, const std::string& host,
                                                     int local_size) {
  const nlohmann::json t = table.is_object() && table.contains("hosts") ? table["hosts"] : nlohmann::json();
  if (!t.is_object() || !t.contains(host) || !t[host].is_array()) return std::nullopt;
  NodeVisibleDevices values;
  for (const nlohmann::json& v : t[host]) {
    if (v.is_string()) {
      values.emplace_back(v.get<std::string>());
    } else {
      values.emplace_back(std::nullopt);
    }
  }
  if (static_cast<int>(values.size()) != local_size) return std::nullopt;
  return values;
}

VisibleDevicesOutcome exchange_visible_devices(Transport& transport, const std::string& host,
                                               const std::optional<std::string>& cvd, const nlohmann::json& watch_offer,
                                               TimePoint deadline) {
  const MpiView view = transport.view();
  const bool root = transport.rank() == 0;
  const std::optional<std::vector<std::string>> all =
      transport.gather(visible_devices_record(host, view.local_rank, cvd), deadline);
  // Rank 0 sends a table even when the gather failed (an empty one): the others stop waiting.
  const std::string table = root && all ? visible_devices_table(*all, watch_offer) : std::string();
  const std::optional<std::string> got = transport.broadcast(table, deadline);
  VisibleDevicesOutcome out;
  if (!got) return out;
  out.completed = true;
  const nlohmann::json message = nlohmann::json::parse(*got, nullptr, false);
  if (!root && message.is_object() && message.contains("watch")) out.watch = message["watch"];
  out.node = visible_devices_of(message, host, view.local_size);
  return out;
}

std::string send_node_facts(Transport& transport, const RankFacts& facts, TimePoint deadline) {
  if (transport.node_broadcast(dump(nlohmann::json(facts)), deadline)) return {};
  return "rank " + std::to_string(transport.rank()) +
         ": its node's facts did not reach the host's other ranks in time (they probed them themselves)";
}

NodeFactsOutcome receive_node_facts(Transport& transport, TimePoint deadline) {
  const std::optional<std::string> got = transport.node_broadcast({}, deadline);
  const std::string who = "rank " + std::to_string(transport.rank()) + ": ";
  if (!got)
    return {nullptr,
            who + "its host's local rank 0 sent no node facts before the probe deadline: it probed them itself"};
  try {
    return {std::make_shared<const RankFacts>(nlohmann::json::parse(*got).get<RankFacts>()), {}};
  } catch (const std::exception& e) {
    return {nullptr, who + "the node facts of its host's local rank 0 did not parse (" + std::string(e.what()) +
                         "): it probed them itself"};
  }
}

}  // namespace preflight
