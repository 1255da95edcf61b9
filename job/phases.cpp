// SPDX-License-Identifier: MIT
#include "job/phases.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include <nlohmann/json.hpp>

#include "transport/payload.hpp"

namespace preflight {
namespace {

double elapsed_since(TimePoint t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string compact_dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

constexpr std::pair<AllreducePlan::Mode, const char*> kModes[] = {
    {AllreducePlan::Mode::Skipped, "skipped"},
    {AllreducePlan::Mode::Mpi, "mpi"},
    {AllreducePlan::Mode::Nccl, "nccl"},
    {AllreducePlan::Mode::None, "none"},
};

}  // namespace

std::vector<int> ranks_behind(const std::vector<RankStatus>& status, Phase phase) {
  std::vector<int> out;
  for (const RankStatus& s : status) {
    if (s.rank != 0 && (s.last_phase < phase || s.silent_s >= kSilentSeconds || !s.lost.empty())) out.push_back(s.rank);
  }
  return out;
}

GatherOutcome gather_phase(Transport& transport, const std::string& payload, const RankFacts& own_facts,
                           const std::vector<CheckResult>& own_results, std::vector<RankStatus>& status,
                           TimePoint deadline) {
  GatherOutcome out;
  if (transport.rank() != 0) {
    out.sent = transport.send_payload(payload, deadline);
    return out;
  }
  if (!status.empty()) status.front().delivered = true;
  out.ranks.push_back(own_facts);
  out.results = own_results;
  transport.collect_payloads(deadline, kMaxPayloadBytes, [&](int rank, std::string bytes, std::size_t announced) {
    if (rank <= 0 || rank >= static_cast<int>(status.size())) return;  // not a rank of this job: nothing to mark
    RankStatus& s = status[static_cast<std::size_t>(rank)];
    if (bytes.empty() && announced > 0) {
      s.payload_error = "payload from rank " + std::to_string(rank) + " is " + std::to_string(announced) +
                        " bytes, over the limit of " + std::to_string(kMaxPayloadBytes);
      return;
    }
    DecodedPayload decoded = decode_payload(bytes, rank);
    if (!decoded.payload) {
      s.payload_error = decoded.error;
      return;
    }
    s.delivered = true;
    out.ranks.push_back(std::move(decoded.payload->facts));
    for (CheckResult& r : decoded.payload->results) out.results.push_back(std::move(r));
    for (std::string& i : decoded.payload->incidents) out.incidents.push_back(std::move(i));
    out.remote_expired = out.remote_expired || !decoded.payload->incidents.empty();
  });
  std::sort(out.ranks.begin(), out.ranks.end(),
            [](const RankFacts& a, const RankFacts& b) { return a.placement.rank < b.placement.rank; });
  for (const RankStatus& s : status) {
    if (!s.delivered && s.payload_error.empty()) out.lost.push_back(s.rank);
  }
  return out;
}

BarrierOutcome barrier_phase(Transport& transport, TimePoint deadline) {
  BarrierOutcome out;
  const TimePoint t0 = Clock::now();
  out.completed = transport.barrier(deadline);
  out.seconds = elapsed_since(t0);
  if (out.completed) return out;
  out.peer_error = transport.last_error();
  out.interrupted = wait_interrupted();
  return out;
}

std::string encode_plan(const AllreducePlan& plan) {
  const auto mode =
      std::find_if(std::begin(kModes), std::end(kModes), [&](const auto& m) { return m.first == plan.mode; });
  nlohmann::json j = {{"mode", mode->second}};
  if (plan.bytes != 0) j["bytes"] = plan.bytes;
  if (!plan.id.empty()) j["id"] = plan.id;
  if (!plan.root.empty()) j["root"] = plan.root;
  if (!plan.why.empty()) j["why"] = plan.why;
  if (!plan.error.empty()) j["error"] = plan.error;
  if (plan.undetermined) j["undetermined"] = true;
  return compact_dump(j);
}

AllreducePlan decode_plan(const std::string& text) {
  AllreducePlan plan;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) {
    plan.error = "no all_reduce plan (rank 0 sent " + std::to_string(text.size()) + " bytes that are not one)";
    return plan;
  }
  const auto text_of = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string mode = text_of("mode");
  const auto known =
      std::find_if(std::begin(kModes), std::end(kModes), [&](const auto& m) { return mode == m.second; });
  if (known == std::end(kModes)) {
    plan.error = text_of("error").empty() ? "no all_reduce plan (mode \"" + mode + "\")" : text_of("error");
    return plan;
  }
  plan.mode = known->first;
  const auto bytes = j.find("bytes");
  plan.bytes = bytes != j.end() && bytes->is_number_unsigned() ? bytes->get<std::uint64_t>() : 0;
  plan.id = text_of("id");
  plan.root = text_of("root");
  plan.why = text_of("why");
  plan.error = text_of("error");
  const auto undetermined = j.find("undetermined");
  plan.undetermined = undetermined != j.end() && undetermined->is_boolean() && undetermined->get<bool>();
  if (plan.mode == AllreducePlan::Mode::None && plan.error.empty()) plan.error = "no all_reduce plan";
  return plan;
}

std::int64_t allreduce_pattern(std::size_t i, int rank) {
  if (i == 0) return 1;
  if (i == 1) return rank;
  return static_cast<std::int64_t>(rank + 1) * static_cast<std::int64_t>(i % 1021 + 1);
}

std::int64_t allreduce_expected_sum(std::size_t i, int size) {
  const std::int64_t n = size;
  if (i == 0) return n;
  if (i == 1) return n * (n - 1) / 2;
  return static_cast<std::int64_t>(i % 1021 + 1) * n * (n + 1) / 2;
}

NcclRankOutcome mpi_allreduce_round(Transport& transport, std::uint64_t bytes, TimePoint deadline, int timed) {
  const std::size_t n = static_cast<std::size_t>(std::max(bytes, kAllreduceMinBytes) / sizeof(std::int64_t));
  const int size = transport.size();
  const int rank = transport.rank();
  NcclRankOutcome o;
  o.rank = rank;
  o.bytes = n * sizeof(std::int64_t);
  o.ok = true;
  std::vector<std::int64_t> buf(n);
  for (int it = 0; it <= timed && o.ok; ++it) {  // iteration 0 warms up
    for (std::size_t i = 0; i < n; ++i) buf[i] = allreduce_pattern(i, rank);
    const TimePoint t = Clock::now();
    if (!transport.allreduce_sum(buf, deadline)) {
      o.ok = false;
      o.expired = true;
      o.step = "allreduce";
      o.error = "MPI all_reduce did not complete within its deadline";
      if (const std::string why = transport.last_error(); !why.empty()) o.error = "MPI all_reduce failed: " + why;
      return o;
    }
    const double took = elapsed_since(t);
    if (it > 0) {
      o.seconds = o.seconds == 0 ? took : std::min(o.seconds, took);
      ++o.repeats;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (buf[i] == allreduce_expected_sum(i, size)) continue;
      o.ok = false;
      o.wrong = true;
      o.step = "verify";
      o.wrong_index = static_cast<std::int64_t>(i);
      o.wrong_value = buf[i];
      o.expected_value = allreduce_expected_sum(i, size);
      o.error = "element " + std::to_string(i) + " is " + std::to_string(buf[i]) + ", expected " +
                std::to_string(o.expected_value) + (i < 2 ? " (the rank count/sum self-check)" : "");
      break;
    }
  }
  if (o.seconds > 0) {
    o.algbw_gbps = static_cast<double>(o.bytes) / o.seconds / 1e9;
    o.busbw_gbps = o.algbw_gbps * 2.0 * (size - 1) / std::max(size, 1);
  }
  return o;
}

std::string to_record(NcclRankOutcome o) {
  std::string text = compact_dump(nlohmann::json(o));
  if (text.size() > kAllreduceRecordBytes) {
    o.error = o.error.substr(0, 1000);
    o.helper = o.helper.substr(0, 500);
    text = compact_dump(nlohmann::json(o));
  }
  text.resize(kAllreduceRecordBytes, ' ');
  return text;
}

NcclRankOutcome from_record(const std::string& record, int rank) {
  try {
    NcclRankOutcome o = nlohmann::json::parse(record).get<NcclRankOutcome>();
    o.rank = rank;
    return o;
  } catch (const std::exception& e) {
    NcclRankOutcome o;
    o.rank = rank;
    o.step = "gather";
    o.error = std::string("its all_reduce record did not parse: ") + e.what();
    return o;
  }
}

}  // namespace preflight
