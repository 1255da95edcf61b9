// SPDX-License-Identifier: MIT
// JUnit XML: one <testsuite> for the run's profile, one <testcase> per check instance
// (classname = area, name = id@host), FAIL and UNKNOWN as <failure>, SKIP as <skipped>, WARN as a
// passing case with its finding in <system-out> (a <failure> with --strict). Written with libxml2's
// xmlTextWriter, which escapes; what XML 1.0 cannot carry (control characters, invalid UTF-8) is
// made printable first.
#include <libxml/xmlwriter.h>

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

}  // namespace

std::string render_junit(const Report& report, const Options& options) {
  const Counts c = count(report);
  const int warn_failures = options.strict ? c.of(Status::Warn) : 0;
  const int failures = c.of(Status::Fail) + c.of(Status::Unknown) + warn_failures;
  const std::string seconds = std::to_string(report.duration_ms / 1000.0);

  Writer w;
  w.start("testsuites");
  w.attr("name", "preflight");
  w.attr("tests", std::to_string(report.results.size()));
  w.attr("failures", std::to_string(failures));
  w.attr("errors", report.deadline_expired ? "1" : "0");
  w.attr("time", seconds);
  w.start("testsuite");
  w.attr("name", std::string("preflight.") + to_string(report.profile));
  w.attr("tests", std::to_string(report.results.size()));
  w.attr("failures", std::to_string(failures));
  w.attr("errors", report.deadline_expired ? "1" : "0");
  w.attr("skipped", std::to_string(c.of(Status::Skip)));
  w.attr("time", seconds);
  if (!report.ranks.empty()) w.attr("hostname", report.ranks.front().identity.hostname);
  for (const CheckResult& r : report.results) {
    const Status s = r.verdict.status;
    for (const std::string& host : r.hosts.empty() ? std::vector<std::string>{"?"} : r.hosts) {
      w.start("testcase");
      w.attr("classname", r.area);
      w.attr("name", r.id + "@" + host);
      w.attr("time", "0");
      if (s == Status::Fail || s == Status::Unknown || (s == Status::Warn && options.strict)) {
        w.start("failure");
        w.attr("type", to_string(s));
        w.attr("message", r.verdict.summary);
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
