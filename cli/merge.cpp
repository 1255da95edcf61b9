// SPDX-License-Identifier: MIT
#include "cli/merge.hpp"
#include "cli/merge_heap.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "checks/check.hpp"
#include "cli/cli.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "core/byte_kind.hpp"
#include "core/fast_json.hpp"
#include "core/json_util.hpp"
#include "core/text.hpp"
#include "job/job_report.hpp"
#include "job/run.hpp"
#include "matrix/compat_matrix.hpp"
#include "sys/bounded_read.hpp"

#ifndef PREFLIGHT_VERSION
#define PREFLIGHT_VERSION "0.0.0"
#endif

extern char** environ;

namespace preflight {
namespace {

using json = nlohmann::json;

constexpr unsigned kMaxReaders = 8;  // threads reading and parsing files

std::string name_of(const std::string& path) { return printable(path, 200); }

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw UsageError(name_of(path) + ": " + what);
}

/// "0" of "0.1.0"; "" when the text does not start with a number.
std::string major_of(std::string_view version) {
  std::size_t n = 0;
  while (n < version.size() && version[n] >= '0' && version[n] <= '9') ++n;
  return std::string(version.substr(0, n));
}

std::string kind_of(const json& j) { return j.type_name(); }

// What a file holds is never quoted in a message (SECURITY.md): a version, a check id and an error
// are shown only in a form that carries nothing else.

/// "0.1.0" when `version` is digits and dots (at most 20), else what it is.
std::string shown_version(std::string_view version) {
  const bool plain =
      !version.empty() && version.size() <= 20 && version.find_first_not_of("0123456789.") == std::string_view::npos;
  return plain ? std::string(version)
               : "(tool.version: no version number, " + std::to_string(version.size()) + " bytes)";
}

/// The check's id when preflight has a check of that id, else "an unknown check id".
std::string shown_check(const std::string& id) { return find_check(id) != nullptr ? id : "an unknown check id"; }

/// Why an item did not read: nlohmann's messages and report/group.cpp's name types and keys,
/// never values; anything else is described, not quoted.
std::string json_error(const std::exception& e) {
  if (dynamic_cast<const json::exception*>(&e) != nullptr ||
      dynamic_cast<const std::invalid_argument*>(&e) != nullptr) {
    return printable(e.what(), 160);
  }
  return "a value of the wrong form";
}

const json& member(const std::string& path, const json& object, const char* key, const char* where) {
  const auto it = object.find(key);
  if (it == object.end()) refuse(path, std::string("not a preflight result: ") + where + " has no \"" + key + "\"");
  return *it;
}

std::optional<Profile> profile_from(std::string_view text) {
  if (text == "node") return Profile::Node;
  if (text == "job") return Profile::Job;
  if (text == "image") return Profile::Image;
  return std::nullopt;
}

int rank_number(const std::string& path, const json& value, const std::string& where) {
  if (!value.is_number_integer()) refuse(path, where + " is " + kind_of(value) + ", not a rank number");
  const std::int64_t n = value.get<std::int64_t>();
  if (n < 0 || n >= kMaxMergeWorld) {
    refuse(path, where + " is " + std::to_string(n) + ": outside 0.." + std::to_string(kMaxMergeWorld - 1));
  }
  return static_cast<int>(n);
}

/// Where and what the JSON reader stopped at, without the bytes: a file merge was pointed at may be
/// anyone's ("byte 0: not JSON (expected '{', found a letter)").
std::string not_json_at(std::string_view text, std::size_t offset) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  const std::string found = offset < text.size() ? byte_kind(static_cast<unsigned char>(text[offset])) : "the end";
  if (offset == first && text[offset] != '{') {
    return "byte " + std::to_string(offset) + ": not JSON (expected '{', found " + found + ")";
  }
  return "byte " + std::to_string(offset) + ": not valid JSON (found " + found + ")";
}

std::string host_of(const RankFacts& f) { return f.identity.hostname.empty() ? std::string("?") : f.identity.hostname; }

}  // namespace

namespace {

/// The *.json entries of the directory open as `dir` (not hidden ones), by name.
std::vector<std::string> json_entries(const std::string& path, const OpenDir& dir) {
  const int listing = ::dup(dir.get());
  DIR* stream = listing < 0 ? nullptr : ::fdopendir(listing);
  if (stream == nullptr) {
    const int err = errno;
    if (listing >= 0) ::close(listing);
    refuse(path, std::string("cannot list the directory: ") + std::strerror(err));
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(stream)) {
    const std::string_view name = entry->d_name;
    if (name.size() > 5 && name.ends_with(".json") && name.front() != '.') names.emplace_back(name);
  }
  const int err = errno;
  ::closedir(stream);
  if (err != 0) refuse(path, std::string("cannot list the directory: ") + std::strerror(err));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::vector<ResultInput> result_files(const std::vector<std::string>& paths) {
  std::vector<ResultInput> out;
  for (const std::string& p : paths) {
    const OpenDir dir = OpenDir::open(p);
    if (!dir) {  // a file, or nothing: read_result_file says which
      out.push_back(ResultInput{p, OpenDir(), std::string()});
      continue;
    }
    const std::vector<std::string> names = json_entries(p, dir);
    if (names.empty()) refuse(p, "the directory holds no *.json result file");
    const std::string prefix = p.ends_with('/') ? p : p + "/";
    for (const std::string& name : names) out.push_back(ResultInput{prefix + name, dir, name});
  }
  return out;
}

std::vector<std::string> input_paths(const std::vector<ResultInput>& inputs) {
  std::vector<std::string> out;
  out.reserve(inputs.size());
  for (const ResultInput& in : inputs) out.push_back(in.path);
  return out;
}

namespace {

/// Reads every file on up to kMaxReaders threads, counting each one read in `files_read` (when
/// given); the first bad file in the order given is the error reported.
std::vector<ResultFile> read_all(const std::vector<ResultInput>& paths, std::atomic<int>* files_read) {
  const std::size_t n = paths.size();
  std::vector<std::optional<ResultFile>> parsed(n);
  std::vector<std::string> errors(n);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto work = [&] {
    for (std::size_t i = next++; i < n && !failed; i = next++) {
      try {
        parsed[i] = read_result_file(paths[i]);
        if (files_read != nullptr) files_read->fetch_add(1, std::memory_order_relaxed);
      } catch (const std::exception& e) {
        errors[i] = e.what();
        failed = true;
      }
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min<std::size_t>({static_cast<std::size_t>(std::min(hw, kMaxReaders)), n});
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::string& error : errors) {
    if (!error.empty()) throw UsageError(error);  // the first refused file in the order given
  }
  std::vector<ResultFile> out;
  out.reserve(n);
  for (std::optional<ResultFile>& file : parsed) out.push_back(std::move(*file));
  return out;
}

}  // namespace

#ifdef PREFLIGHT_HAVE_SIMDJSON
namespace {

using simdjson::dom::element;
namespace fast = fast_json;

Status fast_status(std::string_view text) {
  const std::optional<Status> s = status_from_string(text);
  if (!s) throw fast::GiveUp{};
  return *s;
}

/// One item of "checks" as from_json(const nlohmann::json&, CheckResult&) reads it (a repeated
/// key: the last, as nlohmann's DOM keeps it).
CheckResult fast_check(const element& e) {
  CheckResult r;
  std::optional<std::string_view> status, scope;
  bool has_id = false;
  bool has_finding = false;
  for (const simdjson::dom::key_value_pair m : fast::object_of(e)) {
    const std::string_view key = m.key;
    if (key == "id") {
      r.id = fast::text(m.value);
      has_id = true;
    } else if (key == "title") {
      r.title = fast::text(m.value);
    } else if (key == "status") {
      status = fast::text(m.value);
    } else if (key == "summary") {
      r.verdict.summary = fast::text(m.value);
    } else if (key == "remedy") {
      r.verdict.remedy = fast::text(m.value);
    } else if (key == "evidence") {
      if (!m.value.is_object()) throw fast::GiveUp{};
      r.verdict.evidence = fast::to_nlohmann(m.value);
    } else if (key == "scope") {
      scope = fast::text(m.value);
    } else if (key == "hosts") {
      r.hosts = fast::strings_of(m.value);
    } else if (key == "ranks") {
      r.ranks.clear();
      for (const element rank : fast::array_of(m.value)) r.ranks.push_back(fast::int_of(rank));
    } else if (key == "seconds") {
      double d = 0;
      r.seconds = m.value.is_number() && m.value.get_double().get(d) == simdjson::SUCCESS ? std::max(0.0, d) : 0.0;
    } else if (key == "cause") {
      r.verdict.cause = m.value.is_string() ? std::string(fast::text(m.value)) : std::string();
    } else if (key == "finding") {
      r.verdict.finding = {};
      has_finding = m.value.is_object();
      if (!has_finding) continue;
      for (const simdjson::dom::key_value_pair f : fast::object_of(m.value)) {
        if (f.key == "code") r.verdict.finding.code = fast::text(f.value);
        if (f.key == "message") r.verdict.finding.message = fast::text(f.value);
        if (f.key == "fix") r.verdict.finding.fix = fast::text(f.value);
        if (f.key == "params") {
          r.verdict.finding.params = f.value.is_object() ? fast::to_nlohmann(f.value) : json::object();
        }
      }
    } else if (key == "findings") {
      r.verdict.findings.clear();
      if (!m.value.is_array()) continue;
      for (const element item : fast::array_of(m.value)) {
        if (!item.is_object()) continue;
        Finding one;
        std::optional<element> code, params;
        std::string_view finding_status;
        for (const simdjson::dom::key_value_pair f : fast::object_of(item)) {
          if (f.key == "code") code = f.value;
          if (f.key == "status") finding_status = fast::text(f.value);
          if (f.key == "params") params = f.value;
        }
        if (!code || !code->is_string()) continue;
        one.code = fast::text(*code);
        one.status = status_from_string(finding_status).value_or(Status::Unknown);
        if (params && params->is_object()) one.params = fast::to_nlohmann(*params);
        r.verdict.findings.push_back(std::move(one));
      }
    }
  }
  if (!has_id || !status || !scope) throw fast::GiveUp{};
  r.area = r.id.substr(0, r.id.find('.'));
  r.verdict.status = fast_status(*status);
  if (has_finding) r.verdict.finding.status = r.verdict.status;
  if (*scope == "rank") {
    r.scope = Scope::Rank;
  } else if (*scope == "node") {
    r.scope = Scope::Node;
  } else if (*scope == "job") {
    r.scope = Scope::Job;
  } else {
    throw fast::GiveUp{};
  }
  return r;
}

/// parse_result_file() over simdjson: nullopt where it does not decide (whatever the reference
/// reader would refuse, or read otherwise).
std::optional<ResultFile> fast_result_file(simdjson::dom::parser& parser, const std::string& path,
                                           std::string_view text) {
  element doc;
  if (parser.parse(text.data(), text.size()).get(doc) != simdjson::SUCCESS) return std::nullopt;
  try {
    std::optional<element> schema, tool, profile, world, ranks, checks, incidents, summary;
    for (const simdjson::dom::key_value_pair m : fast::object_of(doc)) {
      if (m.key == "schema") schema = m.value;
      if (m.key == "tool") tool = m.value;
      if (m.key == "profile") profile = m.value;
      if (m.key == "world") world = m.value;
      if (m.key == "ranks") ranks = m.value;
      if (m.key == "checks") checks = m.value;
      if (m.key == "incidents") incidents = m.value;
      if (m.key == "summary") summary = m.value;
    }
    if (!schema || !tool || !profile || !ranks || !checks) return std::nullopt;
    if (fast::text(*schema) != "preflight/v1") return std::nullopt;
    std::optional<element> version;
    for (const simdjson::dom::key_value_pair m : fast::object_of(*tool)) {
      if (m.key == "version") version = m.value;
    }
    if (!version) return std::nullopt;
    const std::string_view theirs = fast::text(*version);
    if (major_of(theirs).empty() || major_of(theirs) != major_of(PREFLIGHT_VERSION)) return std::nullopt;

    ResultFile out;
    out.path = path;
    const std::optional<Profile> p = profile_from(fast::text(*profile));
    if (!p) return std::nullopt;
    out.profile = *p;
    if (world && world->is_object()) {
      std::optional<element> size;
      for (const simdjson::dom::key_value_pair m : fast::object_of(*world)) {
        if (m.key == "size") size = m.value;
      }
      if (size) {
        const int n = fast::int_of(*size);
        if (n < 1 || n > kMaxMergeWorld) return std::nullopt;
        out.world_size = n;
      }
    }

    std::unordered_set<int> own;
    for (const element item : fast::array_of(*ranks)) {
      std::optional<element> rank, facts, host;
      for (const simdjson::dom::key_value_pair m : fast::object_of(item)) {
        if (m.key == "rank") rank = m.value;
        if (m.key == "facts") facts = m.value;
        if (m.key == "host") host = m.value;
      }
      if (!rank || !facts || !facts->is_object()) return std::nullopt;
      const int number = fast::int_of(*rank);
      if (number < 0 || number >= kMaxMergeWorld) return std::nullopt;
      RankFacts f;
      fast::read(*facts, f);
      f.placement.rank = number;
      if (f.identity.hostname.empty() && host && host->is_string()) f.identity.hostname = fast::text(*host);
      if (!own.insert(number).second) return std::nullopt;
      out.ranks.push_back(std::move(f));
    }
    if (out.ranks.empty()) return std::nullopt;

    for (const element item : fast::array_of(*checks)) {
      CheckResult r = fast_check(item);
      if (r.scope == Scope::Job) continue;  // judged again over the merged job
      if (r.ranks.empty()) return std::nullopt;
      for (int rank : r.ranks) {
        if (rank < 0 || !own.contains(rank)) return std::nullopt;
      }
      out.results.push_back(std::move(r));
    }

    if (incidents && incidents->is_array()) {
      for (const element i : fast::array_of(*incidents)) {
        if (i.is_string()) out.incidents.push_back(name_of(path) + ": " + std::string(fast::text(i)));
      }
    }
    if (summary && summary->is_object()) {
      std::optional<element> code;
      for (const simdjson::dom::key_value_pair m : fast::object_of(*summary)) {
        if (m.key == "exit_code") code = m.value;
      }
      std::int64_t c = 0;
      out.deadline_expired = code && code->is_int64() && code->get_int64().get(c) == simdjson::SUCCESS && c == 4;
    }
    return out;
  } catch (const fast::GiveUp&) {
    return std::nullopt;
  }
}

/// A reader thread's parser keeps the buffers of the largest file it parsed (about 13 bytes for
/// each byte of JSON); after a file of more than this it starts afresh.
constexpr std::size_t kKeptParserCapacity = 8u << 20;

}  // namespace
#endif

bool fast_result_reader() {
#ifdef PREFLIGHT_HAVE_SIMDJSON
  return true;
#else
  return false;
#endif
}

std::optional<ResultFile> parse_result_file_fast(const std::string& path, std::string_view text) {
#ifdef PREFLIGHT_HAVE_SIMDJSON
  thread_local simdjson::dom::parser parser;
  std::optional<ResultFile> out = fast_result_file(parser, path, text);
  if (parser.capacity() > kKeptParserCapacity) parser = simdjson::dom::parser();
  return out;
#else
  (void)path;
  (void)text;
  return std::nullopt;
#endif
}

ResultFile parse_result_file(const std::string& path, std::string_view text) {
  if (std::optional<ResultFile> fast = parse_result_file_fast(path, text)) return std::move(*fast);
  return parse_result_file_reference(path, text);
}

ResultFile parse_result_file_reference(const std::string& path, std::string_view text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    if (e.byte >= text.size()) {
      refuse(path,
             "truncated: the JSON ends after " + std::to_string(text.size()) + " bytes, before the document does");
    }
    refuse(path, not_json_at(text, e.byte == 0 ? 0 : e.byte - 1));
  } catch (const json::exception&) {  // out_of_range 406: a number no double holds ("1e309")
    refuse(path, "not valid JSON: a number no double holds");
  }
  if (!doc.is_object()) refuse(path, "not a preflight result: the JSON is " + kind_of(doc) + ", not an object");

  const json& schema = member(path, doc, "schema", "the document");
  if (!schema.is_string() || schema.get<std::string>() != "preflight/v1") {
    refuse(path, "\"schema\" is not \"preflight/v1\" (a result of another format, or not a preflight result)");
  }
  const json& tool = member(path, doc, "tool", "the document");
  if (!tool.is_object()) refuse(path, "\"tool\" is " + kind_of(tool) + ", not an object");
  const json& version = member(path, tool, "version", "\"tool\"");
  if (!version.is_string()) refuse(path, "tool.version is " + kind_of(version) + ", not a string");
  const std::string theirs = version.get<std::string>();
  const std::string ours = PREFLIGHT_VERSION;
  if (major_of(theirs).empty() || major_of(theirs) != major_of(ours)) {
    refuse(path, "written by preflight " + shown_version(theirs) + ", this is preflight " + ours +
                     ": major versions differ (merge the results of one preflight release, or rerun with this one)");
  }

  ResultFile out;
  out.path = path;
  const json& profile = member(path, doc, "profile", "the document");
  const std::optional<Profile> p = profile.is_string() ? profile_from(profile.get<std::string>()) : std::nullopt;
  if (!p) refuse(path, "\"profile\" is " + kind_of(profile) + ", none of node, job, image");
  out.profile = *p;
  if (const auto w = doc.find("world"); w != doc.end() && w->is_object() && w->contains("size")) {
    const json& size = w->at("size");
    if (!size.is_number_integer() || size.get<std::int64_t>() < 1 || size.get<std::int64_t>() > kMaxMergeWorld) {
      refuse(path, "world.size is " + (size.is_number_integer() ? size.dump() : kind_of(size)) +
                       ", not a world size from 1 to " + std::to_string(kMaxMergeWorld));
    }
    out.world_size = static_cast<int>(size.get<std::int64_t>());
  }

  const json& ranks = member(path, doc, "ranks", "the document");
  if (!ranks.is_array()) refuse(path, "\"ranks\" is " + kind_of(ranks) + ", not an array");
  if (ranks.empty()) refuse(path, "holds no rank's facts (\"ranks\" is empty)");
  std::unordered_set<int> own;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const json& item = ranks[i];
    const std::string where = "ranks[" + std::to_string(i) + "]";
    if (!item.is_object()) refuse(path, where + " is " + kind_of(item) + ", not an object");
    const int rank = rank_number(path, member(path, item, "rank", where.c_str()), where + ".rank");
    const json& facts = member(path, item, "facts", where.c_str());
    if (!facts.is_object()) refuse(path, where + ".facts is " + kind_of(facts) + ", not an object");
    if (const std::optional<std::string> bad = float_out_of_range(facts)) {
      refuse(path,
             where + ".facts (rank " + std::to_string(rank) + ") has a number out of range at " + printable(*bad, 160));
    }
    RankFacts f;
    try {
      f = facts.get<RankFacts>();
    } catch (const std::exception& e) {
      refuse(path, where + ".facts (rank " + std::to_string(rank) + ") is malformed: " + json_error(e));
    }
    f.placement.rank = rank;
    if (f.identity.hostname.empty()) {
      if (const auto h = item.find("host"); h != item.end() && h->is_string())
        f.identity.hostname = h->get<std::string>();
    }
    if (!own.insert(rank).second) refuse(path, "rank " + std::to_string(rank) + " appears twice in \"ranks\"");
    out.ranks.push_back(std::move(f));
  }

  member(path, doc, "checks", "the document");
  json& checks = doc.at("checks");
  if (!checks.is_array()) refuse(path, "\"checks\" is " + kind_of(checks) + ", not an array");
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const std::string where = "checks[" + std::to_string(i) + "]";
    json& item = checks[i];
    if (!item.is_object()) refuse(path, where + " is " + kind_of(item) + ", not an object");
    // The evidence is moved out of the document, not copied: it is most of a result's bulk.
    json evidence = json::object();
    if (const auto ev = item.find("evidence"); ev != item.end()) {
      if (!ev->is_object()) refuse(path, where + " is malformed: its evidence is " + kind_of(*ev) + ", not an object");
      evidence = std::move(*ev);
      item.erase("evidence");
    }
    CheckResult r;
    try {
      r = item.get<CheckResult>();
    } catch (const std::exception& e) {
      refuse(path, where + " is malformed: " + json_error(e));
    }
    r.verdict.evidence = std::move(evidence);
    if (r.scope == Scope::Job) continue;  // judged again over the merged job
    for (int rank : r.ranks) {
      if (rank < 0 || !own.contains(rank)) {
        refuse(path, where + " (" + shown_check(r.id) + ") names rank " + std::to_string(rank) +
                         ", whose facts the file does not hold (\"ranks\" and \"checks\" do not match)");
      }
    }
    if (r.ranks.empty()) refuse(path, where + " (" + shown_check(r.id) + ") names no rank");
    out.results.push_back(std::move(r));
  }

  if (const auto inc = doc.find("incidents"); inc != doc.end() && inc->is_array()) {
    for (const json& i : *inc) {
      if (i.is_string()) out.incidents.push_back(name_of(path) + ": " + i.get<std::string>());
    }
  }
  if (const auto s = doc.find("summary"); s != doc.end() && s->is_object()) {
    const auto code = s->find("exit_code");
    out.deadline_expired = code != s->end() && code->is_number_integer() && code->get<std::int64_t>() == 4;
  }
  return out;
}

ResultFile read_result_file(const ResultInput& input) {
  const std::string& path = input.path;
  const BoundedRead r = input.dir ? read_regular_beneath(input.dir.get(), input.name, kMaxResultFileBytes)
                                  : read_regular_file(path, kMaxResultFileBytes);
  using Refusal = BoundedRead::Refusal;
  if (r.refusal == Refusal::TooLarge) {
    refuse(path, "is " + format_bytes(static_cast<std::uint64_t>(r.size)) + ", over the " +
                     format_bytes(kMaxResultFileBytes) + " a result file may have: not a preflight result");
  }
  if (r.refusal == Refusal::Escapes || r.refusal == Refusal::Symlink)
    refuse(path, r.problem(kMaxResultFileBytes) + ": refused");
  if (r.refusal == Refusal::NotRegular || r.refusal == Refusal::Directory)
    refuse(path, "not a regular file (" + file_type_name(r.type) + ")");
  if (!r.ok()) refuse(path, r.problem(kMaxResultFileBytes));
  if (r.grew) refuse(path, "grew while it was read: not a finished result");
  return parse_result_file(path, r.text);
}

ResultFile read_result_file(const std::string& path) {
  return read_result_file(ResultInput{path, OpenDir(), std::string()});
}

MergedJob merge_files(std::vector<ResultFile> files, const Options& options) {
  if (files.empty()) throw UsageError("merge needs at least one result file");
  MergedJob out;

  // One rank of one host in two files is the same result given twice.
  std::unordered_map<std::string, std::size_t> seen;  // host '\n' rank -> file
  std::unordered_set<int> numbers;
  bool collide = false;
  bool separate_runs = true;  // every file a whole world of its own (ranks 0..size-1)
  std::size_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const ResultFile& file = files[i];
    int top = -1;
    for (const RankFacts& f : file.ranks) {
      const std::string key = f.identity.hostname + "\n" + std::to_string(f.placement.rank);
      const auto [it, inserted] = seen.emplace(key, i);
      if (!inserted) {
        refuse(file.path, "rank " + std::to_string(f.placement.rank) + " of host " + host_of(f) + " is also in " +
                              name_of(files[it->second].path) + " (the same result given twice)");
      }
      collide = !numbers.insert(f.placement.rank).second || collide;
      top = std::max(top, f.placement.rank);
    }
    separate_runs = separate_runs && file.world_size == static_cast<int>(file.ranks.size()) &&
                    top + 1 == static_cast<int>(file.ranks.size());
    total += file.ranks.size();
  }
  if (total > static_cast<std::size_t>(kMaxMergeWorld)) {
    throw UsageError("the files hold " + std::to_string(total) + " ranks, more than the " +
                     std::to_string(kMaxMergeWorld) + " a merge takes");
  }

  // Separate runs each number their ranks from 0: renumber them in file order.
  const bool renumber = collide && separate_runs;
  JobFacts& job = out.job;
  job.source = "merge";
  int world = 0;
  if (renumber) {
    int offset = 0;
    for (ResultFile& file : files) {
      const int size = static_cast<int>(file.ranks.size());
      for (RankFacts& f : file.ranks) f.placement.rank += offset;
      for (CheckResult& r : file.results) {
        for (int& rank : r.ranks) rank += offset;
      }
      offset += size;
    }
    world = offset;
    for (ResultFile& file : files) {
      for (RankFacts& f : file.ranks) f.placement.world_size = world;
    }
    out.notes.push_back(std::to_string(files.size()) +
                        " result files of separate runs each numbered their ranks from 0: renumbered in the order "
                        "the files were given (" +
                        name_of(files.front().path) + " holds rank 0" +
                        (files.size() > 1 ? ", " + name_of(files.back().path) + " rank " +
                                                std::to_string(world - static_cast<int>(files.back().ranks.size()))
                                          : std::string()) +
                        "); the ranks[] of the JSON report name each rank's host");
  } else {
    for (const ResultFile& file : files) {
      world = std::max(world, file.world_size);
      for (const RankFacts& f : file.ranks) world = std::max(world, f.placement.rank + 1);
    }
  }
  job.world_size = std::max(1, world);

  // Facts in rank order (file order among equal numbers), their files alongside.
  struct Entry {
    int rank;
    std::size_t file;
    RankFacts* facts;
  };
  std::vector<Entry> entries;
  entries.reserve(total);
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (RankFacts& f : files[i].ranks) entries.push_back(Entry{f.placement.rank, i, &f});
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.rank < b.rank; });

  job.status.resize(static_cast<std::size_t>(job.world_size));
  for (std::size_t r = 0; r < job.status.size(); ++r) job.status[r].rank = static_cast<int>(r);
  job.ranks.reserve(entries.size());
  job.files.reserve(entries.size());
  for (const Entry& e : entries) {
    RankStatus& s = job.status[static_cast<std::size_t>(e.rank)];
    s.host = e.facts->identity.hostname;
    s.pid = e.facts->identity.pid;
    s.last_phase = Phase::Report;
    s.heard = true;
    s.delivered = true;
    job.files.push_back(files[e.file].path);
    job.ranks.push_back(std::move(*e.facts));
  }
  const std::string why = "merged from result files: the ranks ran separately, ";
  job.barrier.note = why + "no barrier ran across them";
  job.allreduce.note = why + "no all_reduce ran across them";
  job.reach_note = why + "no rank connected to rank 0";

  bool all_image = true;
  for (ResultFile& file : files) {
    all_image = all_image && file.profile == Profile::Image;
    out.deadline_expired = out.deadline_expired || file.deadline_expired;
    for (std::string& i : file.incidents) out.incidents.push_back(std::move(i));
    for (CheckResult& r : file.results) out.per_rank.push_back(std::move(r));
  }
  out.profile = options.profile ? *options.profile : all_image ? Profile::Image : Profile::Job;
  return out;
}

namespace {

/// merge_report over files already listed by result_files().
Report merge_listed(const Options& options, const std::vector<ResultInput>& files, const CompatMatrix* matrix,
                    std::atomic<int>* files_read) {
  if (files.empty()) throw UsageError("merge needs at least one result file: preflight merge FILE...");
  MergedJob merged = merge_files(read_all(files, files_read), options);
  // --only/--skip select among the files' results as among the checks a run judges.
  std::erase_if(merged.per_rank, [&options](const CheckResult& r) { return !selected(options, r.id); });
  Report report = assemble_report(options, merged.profile, std::move(merged.job), std::move(merged.per_rank), matrix);
  report.notes.insert(report.notes.begin(),
                      "merged " + std::to_string(files.size()) + " result file" + (files.size() == 1 ? "" : "s"));
  report.notes.insert(report.notes.end(), merged.notes.begin(), merged.notes.end());
  report.incidents.insert(report.incidents.end(), merged.incidents.begin(), merged.incidents.end());
  report.deadline_expired = report.deadline_expired || merged.deadline_expired;
  return report;
}

}  // namespace

Report merge_report(const Options& options, const std::vector<std::string>& paths, const CompatMatrix* matrix,
                    std::atomic<int>* files_read) {
  return merge_listed(options, result_files(paths), matrix, files_read);
}

int merge_command(const Options& options, const std::vector<std::string>& paths, char** reexec_argv) {
  const auto start = std::chrono::steady_clock::now();
  check_report_files(options);  // before any file is read
  const std::optional<CompatMatrix> matrix = load_matrix(options);
  const EnvSnapshot env = EnvSnapshot::capture(environ);
  // The count the progress line shows is of result files, a directory's counted one by one.
  const std::vector<ResultInput> listed = result_files(paths);
  if (reexec_argv != nullptr)
    tune_heap_for_merge(reexec_argv, input_paths(listed));  // returns where it does not re-execute
  std::atomic<int> read{0};
  ProgressLine progress(
      progress_wanted(options, env), static_cast<int>(listed.size()),
      [&read] { return read.load(std::memory_order_relaxed); }, STDERR_FILENO, "files read", utf8_terminal(env));
  progress.phase("merge");
  Report report = merge_listed(options, listed, matrix ? &*matrix : nullptr, &read);
  progress.stop();
  report.duration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  return emit_report(report, options, env, exit_code(report, options.strict));
}

void write_rank_json(const std::string& dir, const Report& report, const Options& options) {
  if (report.ranks.empty()) throw std::invalid_argument("write_rank_json: the report holds no rank");
  make_rank_dir(dir);  // another rank may create it at the same moment; a planted one is refused
  const int rank = report.ranks.front().placement.rank;
  const std::filesystem::path file = std::filesystem::path(dir) / ("preflight-rank-" + std::to_string(rank) + ".json");
  // One line: a job writes one file per rank, and merge reads them all (40% fewer bytes to write
  // to a shared file system and to parse than indented); `jq . FILE` shows one to a person.
  write_atomically(file.string(), render_json(report, options, JsonLayout::Compact));
}

}  // namespace preflight
