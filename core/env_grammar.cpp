// SPDX-License-Identifier: MIT
#include "core/env_grammar.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <iterator>

#include "core/text.hpp"

namespace preflight {
namespace {

// NCCL's setEnvFile copies names and values into 1024-byte buffers.
constexpr std::size_t kNcclConfFieldMax = 1023;

bool iequals(std::string_view a, std::string_view b) { return a.size() == b.size() && to_lower(a) == to_lower(b); }

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool has_control_chars(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return c < 0x20 || c == 0x7F; });
}

std::string quoted(std::string_view value) { return "'" + printable(value, 60) + "'"; }

std::string choice_list(const std::vector<std::string>& choices) { return join(choices, ", "); }

ValueReading pass(std::string reads_as, std::string canonical) {
  return {Status::Pass, std::move(reads_as), std::move(canonical), {}, {}};
}

ValueReading uses_default() { return pass("default", ""); }

// What a consumer does with a value it cannot parse: PyTorch raises, NCCL and CUDA ignore it.
ValueReading unparsable(const Grammar& g, std::string problem, std::string fix = {}) {
  if (g.invalid_raises)
    return {Status::Fail, "error", "", std::move(problem) + "; torch.distributed will raise at init", std::move(fix)};
  return {Status::Warn, "default", "", std::move(problem) + "; it is ignored and the default applies", std::move(fix)};
}

std::optional<std::pair<std::int64_t, std::int64_t>> parse_range(std::string_view text) {
  const std::size_t dots = text.find("..");
  if (dots == std::string_view::npos) return std::nullopt;
  const auto lo = parse_int(text.substr(0, dots));
  const auto hi = parse_int(text.substr(dots + 2));
  if (!lo || !hi || *lo > *hi) return std::nullopt;
  return std::make_pair(*lo, *hi);
}

bool in_range(const Grammar& g, std::int64_t v) { return (!g.min || v >= *g.min) && (!g.max || v <= *g.max); }

bool on_step(const Grammar& g, std::int64_t v) { return !g.step || *g.step <= 0 || v % *g.step == 0; }

std::string range_text(const Grammar& g) {
  std::string text = std::to_string(*g.min) + ".." + std::to_string(*g.max);
  if (g.step) text += " in steps of " + std::to_string(*g.step);
  return text;
}

// A range the reader applies itself: outside it NCCL replaces the value (its own clamp or
// default), torch and CUDA misbehave quietly. None of them raises, so it is a WARN.
void check_range(const Grammar& g, std::int64_t v, ValueReading& r) {
  if (in_range(g, v) && on_step(g, v)) return;
  r.status = Status::Warn;
  r.problem = (in_range(g, v) ? "not a multiple of " + std::to_string(*g.step) : "outside " + range_text(g)) +
              (g.reader == "NCCL" ? "" : "; " + g.reader + " applies no range check");
}

// The value to propose instead: only one that reads cleanly with the same grammar.
std::string verified_fix(const Grammar& g, std::string fix);

std::string unit_hint(const Grammar& g, std::string_view value, const std::optional<std::int64_t>& meant) {
  if (!meant) return {};
  const char* unit = g.unit == Grammar::Unit::Bytes          ? " bytes"
                     : g.unit == Grammar::Unit::Seconds      ? " seconds"
                     : g.unit == Grammar::Unit::Milliseconds ? " milliseconds"
                                                             : "";
  return " (" + printable(trim(value), 40) + " is " + std::to_string(*meant) + unit + ")";
}

ValueReading read_nccl_int(const Grammar& g, std::string_view value) {
  if (value.empty()) return uses_default();
  if (g.reader != "NCCL") {
    // CUDA and Gloo document decimal integers; how they parse anything else is not published.
    const std::optional<std::int64_t> v = parse_int(value);
    if (!v) {
      std::optional<std::int64_t> meant = intended_integer(value, g.unit);
      if (const std::optional<bool> intent = boolean_word_intent(value); intent && !meant) meant = *intent ? 1 : 0;
      return {Status::Warn, std::string(value), "",
              quoted(value) + " is not a decimal integer, which " + g.reader + " expects" + unit_hint(g, value, meant),
              meant ? verified_fix(g, std::to_string(*meant)) : std::string()};
    }
    ValueReading r = pass(std::to_string(*v), std::to_string(*v));
    check_range(g, *v, r);
    return r;
  }
  const std::optional<std::int64_t> v = nccl_int_value(value);
  if (!v)
    return {Status::Warn,
            "default",
            "",
            quoted(value) + " overflows a 64-bit integer; NCCL ignores it and uses its default",
            {}};
  ValueReading r = pass(std::to_string(*v), std::to_string(*v));
  if (is_clean_int(value)) {
    check_range(g, *v, r);
    return r;
  }
  r.status = Status::Warn;
  if (const std::optional<bool> intent = boolean_word_intent(value)) {
    r.fix = *intent ? "1" : "0";
    // strtoll finds no digits in a yes/no word: it is always 0, which inverts "true".
    if (*intent) r.status = Status::Fail;
    r.problem = "NCCL parses integers with strtoll and reads " + quoted(value) + " as " + r.reads_as +
                (*intent ? ", the opposite of what it says" : " only by accident");
  } else if (value.size() > 1 && value.front() == '0' && all_digits(value)) {
    const std::string decimal(value.substr(std::min(value.find_first_not_of('0'), value.size() - 1)));
    r.problem = "NCCL reads " + quoted(value) + " as octal: " + r.reads_as;
    r.fix = decimal;
  } else {
    const std::optional<std::int64_t> meant = intended_integer(value, g.unit);
    r.problem = quoted(value) + " is not a plain integer; NCCL's strtoll reads it as " + r.reads_as +
                unit_hint(g, value, meant);
    if (meant) r.fix = std::to_string(*meant);
  }
  r.fix = verified_fix(g, std::move(r.fix));
  return r;
}

ValueReading read_torch_bool(const Grammar& g, std::string_view value) {
  const std::optional<bool> v = torch_bool_value(value);
  if (!v) return unparsable(g, quoted(value) + " is not one of 1/0, true/false, yes/no, y/n, t/f");
  return pass(*v ? "true" : "false", *v ? "1" : "0");
}

ValueReading read_torch_int(const Grammar& g, std::string_view value) {
  const std::optional<int> v = torch_int_value(value);
  if (!v) {
    const std::optional<std::int64_t> meant = intended_integer(value, g.unit);
    return unparsable(g, quoted(value) + " is not an integer (std::stoi)" + unit_hint(g, value, meant),
                      meant ? verified_fix(g, std::to_string(*meant)) : std::string());
  }
  ValueReading r = pass(std::to_string(*v), std::to_string(*v));
  if (!parse_int(value)) {
    const std::optional<std::int64_t> meant = intended_integer(value, g.unit);
    r.status = Status::Warn;
    r.problem = quoted(value) + " is not a plain integer; torch's std::stoi reads it as " + r.reads_as +
                unit_hint(g, value, meant);
    if (meant) r.fix = verified_fix(g, std::to_string(*meant));
    return r;
  }
  check_range(g, *v, r);
  return r;
}

// NCCL_COMM_ID as bootstrap.cc and ncclSocketGetAddrFromString take it: "[v6]:port", or
// "host:port" read by parseStringList (the name up to ':', atoi of the rest). Without a port
// NCCL's port is -1 (65535 on the wire); a port atoi reads as 0 or outside 1..65535 names no root.
ValueReading read_host_port(const Grammar& g, std::string_view value) {
  (void)g;
  ValueReading r = pass(std::string(value), std::string(value));
  std::string_view host, port;
  if (!value.empty() && value.front() == '[') {
    const std::size_t close = value.find("]:");
    if (close != std::string_view::npos) {
      host = value.substr(1, close - 1);
      port = value.substr(close + 2);
    }
  } else if (const std::size_t colon = value.find(':'); colon != std::string_view::npos) {
    host = value.substr(0, colon);
    port = value.substr(colon + 1);
  }
  const std::optional<std::int64_t> p = parse_int(port);
  if (host.empty() || !p || *p < 1 || *p > 65535) {
    r.status = Status::Fail;
    r.reads_as = "error";
    r.problem = quoted(value) +
                " is not <host>:<port> or [<ipv6>]:<port> with a port in 1..65535; NCCL's bootstrap "
                "cannot reach a root there (\"Invalid NCCL_COMM_ID\" or a connection to the wrong port)";
  }
  return r;
}

const std::string* find_choice(const Grammar& g, std::string_view value, bool any_case) {
  for (const std::string& c : g.choices) {
    if (any_case ? iequals(c, value) : c == value) return &c;
  }
  return nullptr;
}

ValueReading read_enum(const Grammar& g, std::string_view value) {
  if (value.empty() && !g.invalid_raises) return uses_default();
  if (const std::string* c = find_choice(g, value, g.any_case)) {
    ValueReading r = pass(*c, *c);
    const bool has_names =
        std::any_of(g.choices.begin(), g.choices.end(), [](const std::string& s) { return !all_digits(s); });
    if (all_digits(*c) && has_names) {
      r.status = Status::Warn;
      r.problem = "integer levels are legacy and their meaning changed between releases; use a name (" +
                  choice_list(g.choices) + ")";
    }
    return r;
  }
  if (const std::string* c = find_choice(g, value, true)) {
    return unparsable(g, quoted(value) + " is compared case-sensitively (write " + *c + ")", *c);
  }
  return unparsable(g, quoted(value) + " is not one of " + choice_list(g.choices));
}

ValueReading read_list(const Grammar& g, std::string_view value) {
  if (value.empty()) return uses_default();
  std::string_view body = value;
  if (body.front() == '^') body.remove_prefix(1);
  // Newer NCCL accepts per-collective lists ("allreduce:tree;broadcast:ring"); those are not checked.
  if (body.find_first_of(":;") != std::string_view::npos) return pass(std::string(value), std::string(value));
  std::vector<std::string> unknown;
  for (std::string_view item : split(body, ',')) {
    if (!item.empty() && find_choice(g, item, true) == nullptr) unknown.push_back(quoted(item));
  }
  if (unknown.empty()) return pass(std::string(value), std::string(value));
  return {Status::Warn,
          std::string(value),
          std::string(value),
          "unknown name " + join(unknown, ", ") + " (known: " + choice_list(g.choices) + "); it is ignored",
          {}};
}

ValueReading read_text(const Grammar& g, std::string_view value) {
  ValueReading r = pass(std::string(value), std::string(value));
  if (has_control_chars(value)) {
    r.status = Status::Warn;
    r.problem =
        quoted(value) + " contains control characters (a '\\r' from CRLF line endings?); they are part of the value";
    std::copy_if(value.begin(), value.end(), std::back_inserter(r.fix),
                 [](unsigned char c) { return c >= 0x20 && c != 0x7F; });
  } else if (g.kind == Grammar::Kind::Path && !value.empty() && value.front() == '~') {
    r.status = Status::Warn;
    r.problem = "'~' is not expanded: the path is taken literally";
  }
  return r;
}

}  // namespace

std::optional<std::int64_t> nccl_int_value(std::string_view value) {
  const std::string c_string(value);  // NUL-terminated, cut at an embedded NUL like getenv's result
  if (c_string.c_str()[0] == '\0') return std::nullopt;
  errno = 0;
  const long long v = std::strtoll(c_string.c_str(), nullptr, 0);
  if (errno != 0) return std::nullopt;
  return v;
}

bool is_clean_int(std::string_view value) {
  if (!value.empty() && value.front() == '-') value.remove_prefix(1);
  if (value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X')) {
    return std::all_of(value.begin() + 2, value.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
  }
  return value == "0" || (all_digits(value) && value.front() != '0');
}

namespace {
/// true when value (any case) is one of yes, false when one of no, else nullopt.
std::optional<bool> word_in(std::string_view value, std::initializer_list<const char*> yes,
                            std::initializer_list<const char*> no) {
  const std::string v = to_lower(value);
  const auto has = [&v](std::initializer_list<const char*> words) {
    return std::any_of(words.begin(), words.end(), [&v](const char* w) { return v == w; });
  };
  if (has(yes)) return true;
  if (has(no)) return false;
  return std::nullopt;
}
}  // namespace

std::optional<bool> boolean_word_intent(std::string_view value) {
  return word_in(value, {"true", "yes", "on", "y", "t"}, {"false", "no", "off", "n", "f"});
}

std::optional<bool> torch_bool_value(std::string_view value) {
  return word_in(value, {"y", "yes", "1", "t", "true"}, {"n", "no", "0", "f", "false"});
}

std::optional<int> torch_int_value(std::string_view value) {
  const std::string c_string(value);
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(c_string.c_str(), &end, 10);
  if (end == c_string.c_str() || errno == ERANGE || v < INT_MIN || v > INT_MAX) return std::nullopt;
  return static_cast<int>(v);
}

std::optional<Grammar> parse_grammar(std::string_view type, bool invalid_raises) {
  Grammar g;
  g.invalid_raises = invalid_raises;
  if (invalid_raises) g.reader = "torch";
  const std::size_t colon = type.find(':');
  const std::string_view kind = type.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? std::string_view() : type.substr(colon + 1);
  const bool needs_choices = kind == "enum" || kind == "ienum" || kind == "list" || kind == "select";
  const bool takes_range = kind == "int" || kind == "torch_int";
  if (kind == "int") {
    g.kind = Grammar::Kind::Int;
  } else if (kind == "torch_int") {
    g.kind = Grammar::Kind::TorchInt;
  } else if (kind == "torch_bool") {
    g.kind = Grammar::Kind::TorchBool;
  } else if (kind == "enum" || kind == "ienum") {
    g.kind = Grammar::Kind::Enum;
    g.any_case = kind == "ienum";
  } else if (kind == "list" || kind == "select") {
    g.kind = kind == "list" ? Grammar::Kind::List : Grammar::Kind::Select;
    g.any_case = true;
  } else if (kind == "string") {
    g.kind = Grammar::Kind::String;
  } else if (kind == "path") {
    g.kind = Grammar::Kind::Path;
  } else if (kind == "hostport") {
    g.kind = Grammar::Kind::HostPort;
  } else {
    return std::nullopt;
  }
  if (needs_choices) {
    for (std::string_view c : split(arg, '|')) {
      if (c.empty()) return std::nullopt;
      g.choices.emplace_back(c);
    }
  } else if (takes_range && !arg.empty()) {
    std::string_view bounds = arg;
    if (const std::size_t slash = arg.find('/'); slash != std::string_view::npos) {
      const auto step = parse_int(arg.substr(slash + 1));
      if (!step || *step <= 0) return std::nullopt;
      g.step = *step;
      bounds = arg.substr(0, slash);
    }
    const auto range = parse_range(bounds);
    if (!range) return std::nullopt;
    g.min = range->first;
    g.max = range->second;
  } else if (colon != std::string_view::npos) {
    return std::nullopt;
  }
  return g;
}

namespace {

/// strtok_r's pieces: the non-empty runs between delimiters, with where each starts.
std::vector<std::pair<std::size_t, std::string_view>> strtok_pieces(std::string_view text, char delimiter) {
  std::vector<std::pair<std::size_t, std::string_view>> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == delimiter) {
      ++i;
      continue;
    }
    const std::size_t end = std::min(text.find(delimiter, i), text.size());
    out.emplace_back(i, text.substr(i, end - i));
    i = end;
  }
  return out;
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

/// One entry's names: sets `enabled` (per choice) as parseList does; the unknown names, quoted.
std::vector<std::string> apply_names(const Grammar& g, std::string_view list, std::vector<bool>& enabled) {
  const bool negate = !list.empty() && list.front() == '^';
  if (negate) list.remove_prefix(1);
  enabled.assign(g.choices.size(), negate);
  std::vector<std::string> unknown;
  for (const auto& piece : strtok_pieces(list, ',')) {
    const std::string_view name = piece.second;  // a named variable: clang 14 captures no structured binding
    const auto it =
        std::find_if(g.choices.begin(), g.choices.end(), [&](const std::string& c) { return same_name(c, name); });
    if (it == g.choices.end())
      unknown.push_back(quoted(name));
    else
      enabled[static_cast<std::size_t>(it - g.choices.begin())] = !negate;
  }
  return unknown;
}

ValueReading selection_fails(const std::string& value, std::string problem) {
  return {Status::Fail, "nothing (the init fails)", value, std::move(problem), {}};
}

}  // namespace

ValueReading read_nccl_selection(const Grammar& g, std::string_view value, const std::optional<Version>& nccl) {
  const std::string shown(value);
  const Version strict_since = *Version::parse(kNcclStrictSelectionSince);
  const bool strict = !nccl || *nccl >= strict_since;
  const std::string release = nccl ? "NCCL " + nccl->str()
                                   : "NCCL (no loaded library's version known: the rule of " +
                                         std::string(kNcclStrictSelectionSince) + " and later)";
  const std::string what = "(known: " + choice_list(g.choices) + ")";
  // enabled[f][c]: whether collective f may use choice c; all until the value says otherwise.
  std::vector<std::vector<bool>> enabled(std::size(kNcclFunctions), std::vector<bool>(g.choices.size(), true));
  if (!strict) {
    std::vector<bool> names;
    const std::vector<std::string> unknown = apply_names(g, value, names);
    for (auto& f : enabled) f = names;
    if (std::none_of(names.begin(), names.end(), [](bool b) { return b; })) {
      return selection_fails(shown, release + " enables nothing it knows " + what +
                                        ": every collective fails with \"no algorithm/protocol available\"" +
                                        (value.find_first_of(":;") != std::string_view::npos
                                             ? "; per-collective entries (func:list;func:list) need NCCL " +
                                                   std::string(kNcclStrictSelectionSince) + " or later"
                                             : ""));
    }
    if (unknown.empty()) return pass(shown, shown);
    return {Status::Warn,
            shown,
            shown,
            release + " skips the unknown name" + (unknown.size() == 1 ? " " : "s ") + join(unknown, ", ") + " " +
                what +
                (value.find_first_of(":;") != std::string_view::npos
                     ? "; per-collective entries (func:list;func:list) need NCCL " +
                           std::string(kNcclStrictSelectionSince) + " or later"
                     : ""),
            {}};
  }
  const std::string refuses = release + " refuses it (ncclInvalidUsage: every communicator init fails): ";
  for (const auto& [at, entry] : strtok_pieces(value, ';')) {
    const auto parts = strtok_pieces(entry, ':');
    if (parts.empty()) continue;
    std::string_view prefix = parts[0].second;
    std::string_view list;
    if (parts.size() < 2) {
      if (at != 0)
        return selection_fails(
            shown, refuses + "every entry after the first needs its collective (" + quoted(entry) + " has none)");
      list = prefix;
      prefix = {};
    } else {
      list = parts[1].second;  // a third ':' piece is ignored, as strtok_r leaves it
    }
    bool found = false;
    for (std::size_t f = 0; f < std::size(kNcclFunctions); ++f) {
      if (!prefix.empty() && !same_name(prefix, kNcclFunctions[f])) continue;
      found = true;
      std::vector<bool> names;
      if (const std::vector<std::string> unknown = apply_names(g, list, names); !unknown.empty())
        return selection_fails(shown, refuses + "unknown name " + unknown.front() + " " + what);
      enabled[f] = names;
    }
    if (!found) {
      std::vector<std::string> funcs(std::begin(kNcclFunctions), std::end(kNcclFunctions));
      return selection_fails(shown,
                             refuses + "unknown collective " + quoted(prefix) + " (known: " + choice_list(funcs) + ")");
    }
  }
  std::vector<std::string> none;
  for (std::size_t f = 0; f < enabled.size(); ++f) {
    if (std::none_of(enabled[f].begin(), enabled[f].end(), [](bool b) { return b; }))
      none.emplace_back(kNcclFunctions[f]);
  }
  if (!none.empty()) {
    return selection_fails(shown, release + " is left with nothing enabled for " + join(none, ", ") +
                                      ": those collectives fail with \"no algorithm/protocol available\"");
  }
  return pass(shown, shown);
}

ValueReading read_value(const Grammar& grammar, std::string_view value) {
  return read_value(grammar, value, std::nullopt);
}

ValueReading read_value(const Grammar& grammar, std::string_view value, const std::optional<Version>& nccl) {
  switch (grammar.kind) {
    case Grammar::Kind::Select: return read_nccl_selection(grammar, value, nccl);
    case Grammar::Kind::Int: return read_nccl_int(grammar, value);
    case Grammar::Kind::TorchBool: return read_torch_bool(grammar, value);
    case Grammar::Kind::TorchInt: return read_torch_int(grammar, value);
    case Grammar::Kind::Enum: return read_enum(grammar, value);
    case Grammar::Kind::List: return read_list(grammar, value);
    case Grammar::Kind::HostPort: return read_host_port(grammar, value);
    case Grammar::Kind::String:
    case Grammar::Kind::Path: return read_text(grammar, value);
  }
  return read_text(grammar, value);
}

namespace {
std::string verified_fix(const Grammar& g, std::string fix) {
  if (fix.empty()) return fix;
  const ValueReading again = read_value(g, fix);
  return again.status == Status::Pass ? fix : std::string();
}
}  // namespace

std::optional<std::int64_t> intended_integer(std::string_view value, Grammar::Unit unit) {
  const std::string_view v = trim(value);
  std::size_t digits = 0;
  while (digits < v.size() && std::isdigit(static_cast<unsigned char>(v[digits])) != 0) ++digits;
  if (digits == 0 || digits > 15) return std::nullopt;
  const std::int64_t number = *parse_int(v.substr(0, digits));
  const std::string suffix = to_lower(trim(v.substr(digits)));
  if (suffix.empty())
    return v.size() == value.size() && v.front() != '0' ? std::nullopt : std::optional<std::int64_t>(number);
  std::int64_t scale = 0;
  const auto any = [&suffix](std::initializer_list<const char*> words) {
    return std::any_of(words.begin(), words.end(), [&suffix](const char* w) { return suffix == w; });
  };
  switch (unit) {
    case Grammar::Unit::Bytes:
      if (any({"b"}))
        scale = 1;
      else if (any({"k", "kb", "kib"}))
        scale = 1LL << 10;
      else if (any({"m", "mb", "mib"}))
        scale = 1LL << 20;
      else if (any({"g", "gb", "gib"}))
        scale = 1LL << 30;
      break;
    case Grammar::Unit::Seconds:
      if (any({"s", "sec", "secs", "second", "seconds"}))
        scale = 1;
      else if (any({"m", "min", "mins", "minute", "minutes"}))
        scale = 60;
      else if (any({"h", "hr", "hrs", "hour", "hours"}))
        scale = 3600;
      break;
    case Grammar::Unit::Milliseconds:
      if (any({"ms", "msec", "millisecond", "milliseconds"}))
        scale = 1;
      else if (any({"s", "sec", "secs", "second", "seconds"}))
        scale = 1000;
      else if (any({"m", "min", "mins", "minute", "minutes"}))
        scale = 60000;
      break;
    case Grammar::Unit::None: break;
  }
  if (scale == 0 || number > (std::int64_t{1} << 40)) return std::nullopt;
  return number * scale;
}

ConfFileContents parse_nccl_conf(std::string_view text, bool strip_cr) {
  ConfFileContents out;
  int number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++number;
    if (strip_cr && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && line.front() == '#') continue;
    line = line.substr(0, line.find('\0'));  // NCCL works on C strings from here on
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      const std::string_view content = trim(line);
      if (eq == 0 || (!content.empty() && content.front() != '#')) out.malformed_lines.push_back(number);
      continue;
    }
    out.entries.push_back({std::string(line.substr(0, std::min(eq, kNcclConfFieldMax))),
                           std::string(line.substr(eq + 1, kNcclConfFieldMax)), number});
  }
  return out;
}

bool is_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

std::string passwd_entry(std::string_view passwd, unsigned uid) {
  const std::string wanted = std::to_string(uid);
  for (std::string_view line : split(passwd, '\n')) {
    const std::vector<std::string_view> fields = split(line, ':');
    if (fields.size() >= 6 && fields[2] == wanted && !fields[5].empty()) return std::string(line) + "\n";
  }
  return {};
}

std::optional<std::string> passwd_home(std::string_view passwd, unsigned uid) {
  const std::string line = passwd_entry(passwd, uid);
  if (line.empty()) return std::nullopt;
  const std::string_view fields = std::string_view(line).substr(0, line.size() - 1);  // without the newline
  return std::string(split(fields, ':')[5]);
}

}  // namespace preflight
