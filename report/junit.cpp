// SPDX-License-Identifier: MIT
// JUnit XML: one <testsuite> for the run's profile, one <testcase> per check instance
// (classname = area, name = id@host), FAIL and UNKNOWN as <failure>, SKIP as <skipped>, WARN as a
// passing case with its finding in <system-out> (a <failure> with --strict). Written with libxml2's
// xmlTextWriter, which escapes; what XML 1.0 cannot carry (control characters, invalid UTF-8) is
// made printable first.
#include <libxml/xmlwriter.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <stdexcept>

#include "core/text.hpp"
#include "report/report.hpp"

namespace preflight {
namespace {

/// XML-safe text: keeps newlines and tabs, escapes other control bytes and invalid UTF-8.
std::string xml_text(std::string_view raw) {
  std::string out;
  for (std::string_view line : split(raw, '\n')) {
    if (!out.empty()) out += '\n';
    out += printable(line, 100000);
  }
  return out;
}

class Writer {
 public:
  Writer() : m_buf(xmlBufferCreate(), xmlBufferFree), m_w(xmlNewTextWriterMemory(m_buf.get(), 0), xmlFreeTextWriter) {
    if (!m_buf || !m_w) throw std::runtime_error("libxml2: cannot create an XML writer");
    xmlTextWriterSetIndent(m_w.get(), 1);
    xmlTextWriterSetIndentString(m_w.get(), reinterpret_cast<const xmlChar*>("  "));
    check(xmlTextWriterStartDocument(m_w.get(), nullptr, "UTF-8", nullptr));
  }
  void start(const char* element) { check(xmlTextWriterStartElement(m_w.get(), x(element))); }
  void end() { check(xmlTextWriterEndElement(m_w.get())); }
  void attr(const char* name, const std::string& value) {
    check(xmlTextWriterWriteAttribute(m_w.get(), x(name), x(xml_text(value).c_str())));
  }
  void text(const std::string& value) { check(xmlTextWriterWriteString(m_w.get(), x(xml_text(value).c_str()))); }
  std::string finish() {
    check(xmlTextWriterEndDocument(m_w.get()));
    xmlTextWriterFlush(m_w.get());
    return std::string(reinterpret_cast<const char*>(xmlBufferContent(m_buf.get())),
                       static_cast<std::size_t>(xmlBufferLength(m_buf.get())));
  }

 private:
  static const xmlChar* x(const char* s) { return reinterpret_cast<const xmlChar*>(s); }
  static void check(int rc) {
    if (rc < 0) throw std::runtime_error("libxml2: writing the JUnit report failed");
  }
  std::unique_ptr<xmlBuffer, void (*)(xmlBufferPtr)> m_buf;
  std::unique_ptr<xmlTextWriter, void (*)(xmlTextWriterPtr)> m_w;
};

std::string body(const CheckResult& r) {
  std::string b = r.verdict.summary;
  if (!r.verdict.remedy.empty()) b += "\nfix: " + r.verdict.remedy;
  if (!r.verdict.evidence.empty()) {
    b += "\nevidence: " + r.verdict.evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return b;
}

/// Seconds with millisecond precision, as JUnit readers expect ("0.042").
std::string seconds_text(double s) { return fixed(s > 0 ? s : 0.0, 3); }

/// ISO 8601 UTC, seconds precision: when the run started.
std::string timestamp_text(const Report& report) {
  using namespace std::chrono;
  const auto started =
      system_clock::now() - duration_cast<system_clock::duration>(duration<double, std::milli>(report.duration_ms));
  const std::time_t t = system_clock::to_time_t(started);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// A failing case: a FAIL (a WARN under --strict) or an UNKNOWN, which fails the run too (exit 3).
bool is_failure(Status s, bool strict) {
  const Status counted = counted_as(s, strict);
  return counted == Status::Fail || counted == Status::Unknown;
}

}  // namespace

std::string render_junit(const Report& unredacted, const Options& options) {
  const Report report = redact_report(unredacted, report_redactor(unredacted));
  // One testcase per check instance: a result judged on several hosts is one case per host.
  int cases = 0, failures = 0, skipped = 0;
  for (const CheckResult& r : report.results) {
    const int n = r.hosts.empty() ? 1 : static_cast<int>(r.hosts.size());
    cases += n;
    if (is_failure(r.verdict.status, options.strict)) failures += n;
    if (r.verdict.status == Status::Skip) skipped += n;
  }
  const std::string errors = report.deadline_expired ? "1" : "0";
  const std::string seconds = seconds_text(report.duration_ms / 1000.0);

  Writer w;
  w.start("testsuites");
  w.attr("name", "preflight");
  w.attr("tests", std::to_string(cases));
  w.attr("failures", std::to_string(failures));
  w.attr("errors", errors);
  w.attr("skipped", std::to_string(skipped));
  w.attr("time", seconds);
  w.start("testsuite");
  w.attr("name", std::string("preflight.") + to_string(report.profile));
  w.attr("tests", std::to_string(cases));
  w.attr("failures", std::to_string(failures));
  w.attr("errors", errors);
  w.attr("skipped", std::to_string(skipped));
  w.attr("time", seconds);
  w.attr("timestamp", timestamp_text(report));
  if (!report.ranks.empty()) w.attr("hostname", report.ranks.front().identity.hostname);
  w.start("properties");
  const auto property = [&w](const char* name, const std::string& value) {
    w.start("property");
    w.attr("name", name);
    w.attr("value", value);
    w.end();
  };
  property("preflight.version", report.version);
  property("profile", to_string(report.profile));
  property("world_size", std::to_string(report.world_size));
  property("nodes", std::to_string(report.nodes));
  property("launcher", report.launcher);
  property("exit_code", std::to_string(exit_code(report, options.strict)));
  property("strict", options.strict ? "true" : "false");
  w.end();
  for (const CheckResult& r : report.results) {
    const Status s = r.verdict.status;
    for (const std::string& host : r.hosts.empty() ? std::vector<std::string>{"?"} : r.hosts) {
      w.start("testcase");
      w.attr("classname", r.area);
      w.attr("name", r.id + "@" + (host.empty() ? std::string("?") : host));
      w.attr("time", seconds_text(r.seconds));
      if (is_failure(s, options.strict)) {
        w.start("failure");
        w.attr("type", to_string(s));
        w.attr("message", r.verdict.cause.empty() ? r.verdict.summary
                                                  : r.verdict.summary + " (follows from " + r.verdict.cause + ")");
        w.text(body(r));
        w.end();
      } else if (s == Status::Skip) {
        w.start("skipped");
        w.attr("message", r.verdict.summary);
        w.end();
      } else {
        w.start("system-out");
        w.text(std::string(to_string(s)) + ": " + body(r));
        w.end();
      }
      w.end();
    }
  }
  if (report.deadline_expired) {
    w.start("system-err");
    w.text(join(report.incidents, "\n"));
    w.end();
  }
  w.end();
  w.end();
  return w.finish();
}

}  // namespace preflight
