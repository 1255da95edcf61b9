// SPDX-License-Identifier: MIT
#include "core/verdict.hpp"

#include <atomic>

#include "core/finding_observer.hpp"

namespace preflight {

namespace {
std::atomic<FindingObserver> g_finding_observer{nullptr};

FindingObserver observer() { return g_finding_observer.load(std::memory_order_relaxed); }
}  // namespace

FindingObserver set_finding_observer(FindingObserver observer) { return g_finding_observer.exchange(observer); }

const char* to_string(Status s) {
  switch (s) {
    case Status::Pass: return "PASS";
    case Status::Warn: return "WARN";
    case Status::Fail: return "FAIL";
    case Status::Skip: return "SKIP";
    case Status::Unknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

std::optional<Status> status_from_string(std::string_view text) {
  for (Status s : kStatuses) {
    if (text == to_string(s)) return s;
  }
  return std::nullopt;
}

int severity(Status s) { return static_cast<int>(s); }

Status worst(Status a, Status b) { return severity(a) >= severity(b) ? a : b; }

Verdict Verdict::pass(std::string summary, nlohmann::json evidence) {
  return {Status::Pass, std::move(summary), {}, std::move(evidence)};
}
Verdict Verdict::warn(std::string summary, std::string remedy, nlohmann::json evidence) {
  return {Status::Warn, std::move(summary), std::move(remedy), std::move(evidence)};
}
Verdict Verdict::fail(std::string summary, std::string remedy, nlohmann::json evidence) {
  return {Status::Fail, std::move(summary), std::move(remedy), std::move(evidence)};
}
Verdict Verdict::skip(std::string reason, nlohmann::json evidence) {
  return {Status::Skip, std::move(reason), {}, std::move(evidence)};
}
Verdict Verdict::unknown(std::string summary, std::string remedy, nlohmann::json evidence) {
  return {Status::Unknown, std::move(summary), std::move(remedy), std::move(evidence)};
}

namespace {
bool is_template_param(const nlohmann::json& value) {
  return value.is_object() && value.size() == 1 && value.contains("template") && value["template"].is_string();
}

/// render_template; a template parameter met on the way is rendered in place with the same
/// parameters, `depth` levels deep at most (a template that names itself ends there).
std::string render(std::string_view text, const nlohmann::json& params, int depth) {
  if (!params.is_object() || params.empty()) return std::string(text);
  // A parameter is {name} with name of [a-z0-9_]; any other brace is text ("{medium: Memory,
  // sizeLimit: {gib}Gi}" renders its {gib} and keeps the outer braces).
  const auto is_name = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; };
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t open = text.find('{', i);
    if (open == std::string_view::npos) break;
    std::size_t end = open + 1;
    while (end < text.size() && is_name(text[end])) ++end;
    out.append(text.substr(i, open - i));
    const auto it = end > open + 1 && end < text.size() && text[end] == '}'
                        ? params.find(std::string(text.substr(open + 1, end - open - 1)))
                        : params.end();
    if (it == params.end()) {
      out += '{';
      i = open + 1;
      continue;
    }
    if (it->is_string()) {
      out += it->get_ref<const std::string&>();
    } else if (is_template_param(*it)) {
      const std::string& part = (*it)["template"].get_ref<const std::string&>();
      out += depth > 0 ? render(part, params, depth - 1) : part;
    } else {
      out += it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    i = end + 1;
  }
  out.append(text.substr(i));
  return out;
}
}  // namespace

std::string render_template(std::string_view text, const nlohmann::json& params) { return render(text, params, 2); }

nlohmann::json template_param(std::string text) { return {{"template", std::move(text)}}; }

std::string splice_template_params(std::string_view text, const nlohmann::json& params) {
  if (!params.is_object()) return std::string(text);
  nlohmann::json templates = nlohmann::json::object();
  for (const auto& [name, value] : params.items()) {
    if (is_template_param(value)) templates[name] = value["template"];
  }
  return templates.empty() ? std::string(text) : render_template(text, templates);
}

namespace {
/// Writes the template-valued parameters into `message` and `fix` and takes them out of `params`:
/// what they stood for is in the templates now, with the finding's other parameters.
void splice_into(std::string& message, std::string& fix, nlohmann::json& params) {
  message = splice_template_params(message, params);
  fix = splice_template_params(fix, params);
  if (!params.is_object()) return;
  for (auto it = params.begin(); it != params.end();) it = is_template_param(*it) ? params.erase(it) : std::next(it);
}
}  // namespace

Verdict Verdict::coded(Status s, std::string code, std::string message, std::string fix, nlohmann::json params,
                       nlohmann::json evidence) {
  splice_into(message, fix, params);
  Verdict v;
  v.status = s;
  v.summary = render_template(message, params);
  v.remedy = render_template(fix, params);
  v.evidence = std::move(evidence);
  v.finding = {std::move(code), s, std::move(message), std::move(fix), std::move(params)};
  v.findings = {v.finding};
  if (const FindingObserver o = observer()) o(v.finding);
  return v;
}

Verdict Verdict::of(const FindingSpec& spec, nlohmann::json params, nlohmann::json evidence) {
  return coded(spec.status, std::string(spec.code), std::string(spec.message), std::string(spec.fix), std::move(params),
               std::move(evidence));
}

void VerdictBuilder::add(const FindingSpec& spec, nlohmann::json params) {
  add(spec.status, std::string(spec.code), std::string(spec.message), std::string(spec.fix), std::move(params));
}

void VerdictBuilder::add(Status s, std::string summary, std::string remedy) {
  m_status = worst(m_status, s);
  m_findings.push_back({s, {}, std::move(summary), std::move(remedy)});
}

void VerdictBuilder::add(Status s, std::string code, std::string message, std::string fix, nlohmann::json params) {
  splice_into(message, fix, params);
  m_status = worst(m_status, s);
  if (params.is_object()) {
    for (const auto& [name, value] : params.items()) {
      const auto it = m_params.find(name);
      if (it != m_params.end() && *it != value) m_params_collide = true;
      m_params[name] = value;
    }
  }
  m_findings.push_back(
      {s, std::move(code), std::move(message), std::move(fix), params.is_object() ? params : nlohmann::json::object()});
  const Item& item = m_findings.back();
  if (const FindingObserver o = observer(); o != nullptr && !item.code.empty()) {
    o({item.code, item.status, item.message, item.fix, item.params});
  }
}

Verdict VerdictBuilder::build() const {
  // Two texts side by side: the templates (the finding the report groups by) and the text, each
  // finding rendered with its own parameters (two findings may use one name for different values).
  std::string message, summary;
  std::string code;
  const auto rendered = [](const Item& f, const std::string& text) {
    return f.code.empty() ? text : render_template(text, f.params);
  };
  const auto append = [](std::string& to, const std::string& sep, const std::string& text) {
    if (!to.empty()) to += sep;
    to += text;
  };
  for (const Item& f : m_findings) {
    if (f.status == m_status && !f.message.empty()) {
      append(message, "; ", f.message);
      append(summary, "; ", rendered(f, f.message));
      if (code.empty()) code = f.code;
    }
  }
  // A lesser finding whose remedy is printed is named too: no fix without its problem.
  for (Status level : {Status::Fail, Status::Unknown, Status::Warn, Status::Skip}) {
    if (level == m_status) continue;
    for (const Item& f : m_findings) {
      if (f.status == level && !f.fix.empty() && !f.message.empty()) {
        const std::string also = std::string("also ") + to_string(level) + ": ";
        append(message, "; ", also + f.message);
        append(summary, "; ", also + rendered(f, f.message));
      }
    }
  }
  // The remedies of every non-PASS finding, worst first, each once.
  std::string fix, remedy;
  for (Status level : {Status::Fail, Status::Unknown, Status::Warn, Status::Skip}) {
    for (const Item& f : m_findings) {
      if (f.status != level || f.fix.empty()) continue;
      const std::string text = rendered(f, f.fix);
      if (remedy.find(text) != std::string::npos) continue;
      append(fix, " ", f.fix);
      append(remedy, " ", text);
    }
  }
  if (message.empty()) message = summary = "no findings";
  Verdict v;
  v.status = m_status;
  v.evidence = m_evidence;
  v.summary = std::move(summary);
  v.remedy = std::move(remedy);
  // The joined templates stand for the verdict only when their parameters do not collide.
  if (!code.empty() && !m_params_collide) v.finding = {code, m_status, std::move(message), std::move(fix), m_params};
  for (Status level : {Status::Fail, Status::Unknown, Status::Warn, Status::Skip, Status::Pass}) {
    for (const Item& f : m_findings) {
      if (f.status == level && !f.code.empty()) v.findings.push_back({f.code, f.status, f.message, f.fix, f.params});
    }
  }
  return v;
}

}  // namespace preflight
