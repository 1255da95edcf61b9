// SPDX-License-Identifier: MIT
// The redaction rule of every output: secret variable names, URL userinfo, and the Redactor that
// scrubs known secret values (see core/redact.hpp).
#include "core/redact.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>

#include "core/text.hpp"

namespace preflight {
namespace {

// --- secret names ---------------------------------------------------------------------------------

// A name is upper-cased and split into words at '_' (and any other character that is not a letter
// or digit); a rule matches a word, the end of a word, the last word, or text anywhere in the
// words joined again with '_'.
enum class NamePart { Anywhere, Word, WordEnd, LastWord };

struct SecretNameRule {
  NamePart part;
  std::string_view pattern;
  std::string_view why;
};

constexpr SecretNameRule kSecretNameRules[] = {
    {NamePart::Anywhere, "TOKEN",
     "API, session and auth tokens: HF_TOKEN, HUGGING_FACE_HUB_TOKEN, GITHUB_TOKEN, AWS_SESSION_TOKEN, "
     "MLFLOW_TRACKING_TOKEN, *_AUTH_TOKEN, *_ACCESS_TOKEN"},
    {NamePart::Anywhere, "SECRET", "secret keys and client secrets: AWS_SECRET_ACCESS_KEY, *_CLIENT_SECRET"},
    {NamePart::Anywhere, "PASSWORD", "MLFLOW_TRACKING_PASSWORD, PGPASSWORD, *_PASSWORD"},
    {NamePart::Anywhere, "PASSWD", "*_PASSWD"},
    {NamePart::Anywhere, "PASSPHRASE", "the passphrase of a key (*_KEY_PASSPHRASE)"},
    {NamePart::Word, "PASS", "a password under its short name: DB_PASS, SMTP_PASS"},
    {NamePart::LastWord, "PWD", "MYSQL_PWD, the MySQL client's password (PWD and OLDPWD alone are directories)"},
    {NamePart::Anywhere, "CREDENTIAL", "*_CREDENTIALS; GOOGLE_APPLICATION_CREDENTIALS may hold the JSON itself"},
    {NamePart::Word, "CREDS", "*_CREDS"},
    {NamePart::WordEnd, "KEY",
     "API, access and private keys: WANDB_API_KEY, NGC_API_KEY, AWS_SECRET_ACCESS_KEY, AWS_ACCESS_KEY_ID, "
     "*_PRIVATE_KEY, OPENAI_APIKEY; *_KEY_FILE too, conservatively: some tools take the key itself in it, and "
     "no check needs its path"},
    {NamePart::WordEnd, "KEYS", "*_KEYS"},
    {NamePart::Anywhere, "PRECONDITION_TRANSPORTS",
     "Open MPI's OMPI_MCA_orte_precondition_transports (OMPI_MCA_pmix_*_precondition_transports): the job's "
     "128-bit key with which the PSM, PSM2 and OFI transports admit a process to the job's endpoints"},
    {NamePart::Anywhere, "COOKIE", "HTTP, Erlang and X11 cookies: a session's credential"},
    {NamePart::Anywhere, "JWT", "SLURM_JWT: Slurm's auth/jwt token for sbatch, scontrol and slurmrestd"},
    {NamePart::LastWord, "AUTH",
     "NPM_CONFIG__AUTH, *_BASIC_AUTH: an encoded user:password (SSH_AUTH_SOCK, a socket, is not: AUTH is not "
     "its last word)"},
    {NamePart::Anywhere, "CONNECTION_STRING", "AZURE_STORAGE_CONNECTION_STRING holds AccountKey="},
    {NamePart::LastWord, "DSN", "SENTRY_DSN and database DSNs carry a key or a password in the URL's user part"},
};

// Words that are no secret, taken out before the rules: InfiniBand's partition key (NCCL_IB_PKEY,
// UCX_IB_PKEY) is a 16-bit number the fabric's administrator publishes; TOKENIZERS_PARALLELISM is
// the Hugging Face tokenizers' thread switch.
constexpr std::string_view kNotSecretWords[] = {"PKEY", "PKEYS", "TOKENIZER", "TOKENIZERS"};

std::vector<std::string> name_words(std::string_view name) {
  std::vector<std::string> words(1);
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      words.back() += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    } else if (!words.back().empty()) {
      words.emplace_back();
    }
  }
  if (words.back().empty()) words.pop_back();
  std::erase_if(words, [](const std::string& w) {
    return std::find(std::begin(kNotSecretWords), std::end(kNotSecretWords), w) != std::end(kNotSecretWords);
  });
  return words;
}

bool rule_matches(const SecretNameRule& rule, const std::vector<std::string>& words, const std::string& joined) {
  switch (rule.part) {
    case NamePart::Anywhere: return joined.find(rule.pattern) != std::string::npos;
    case NamePart::Word: return std::find(words.begin(), words.end(), rule.pattern) != words.end();
    case NamePart::WordEnd:
      return std::any_of(words.begin(), words.end(), [&](const std::string& w) { return w.ends_with(rule.pattern); });
    case NamePart::LastWord: return words.size() > 1 && words.back() == rule.pattern;
  }
  return false;
}

// --- URL userinfo -----------------------------------------------------------------------------------

/// Characters that end a word a userinfo can be in: spaces, quotes, brackets and the delimiters of
/// a URL's other parts.
bool userinfo_stop(char c) {
  return std::isspace(static_cast<unsigned char>(c)) ||
         std::string_view("\"'`<>/\\[]{}|^?#").find(c) != std::string_view::npos;
}

bool host_start(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '['; }

struct UserinfoSpan {
  std::size_t begin;
  std::size_t end;
  std::size_t colon;  // where the password starts, minus one
};

/// The "user:password" spans of text, in order (see redact_userinfo).
std::vector<UserinfoSpan> userinfo_spans(std::string_view text) {
  std::vector<UserinfoSpan> spans;
  for (std::size_t at = text.find('@'); at != std::string_view::npos; at = text.find('@', at + 1)) {
    if (at + 1 >= text.size() || !host_start(text[at + 1])) continue;
    std::size_t next = at + 1;
    while (next < text.size() && !userinfo_stop(text[next]) && text[next] != '@') ++next;
    if (next < text.size() && text[next] == '@') continue;  // not the last '@' of its word
    std::size_t begin = at;
    while (begin > 0 && !userinfo_stop(text[begin - 1])) --begin;
    std::size_t colon = text.substr(begin, at - begin).find(':');
    if (colon == std::string_view::npos) continue;
    colon += begin;
    // NAME=user:pw, --opt=user:pw, (user:pw: the userinfo starts after the last of these before ':'.
    if (const std::size_t lead = text.substr(0, colon).find_last_of("=(,;");
        lead != std::string_view::npos && lead >= begin) {
      begin = lead + 1;
    }
    if (colon + 1 >= at) continue;  // "user:@host": no password
    spans.push_back({begin, at, colon});
  }
  return spans;
}

std::size_t shown_char_count(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

bool is_env_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// --- known secrets --------------------------------------------------------------------------------

constexpr std::size_t kMinSecret = 4;        // shorter values are redacted only where shown as their value
constexpr std::size_t kAnywhereSecret = 8;   // from this length, inside words too
constexpr std::size_t kTruncatedProbe = 12;  // a shown prefix of this length counts, when cut off
constexpr std::size_t kLongPrefix = 32;      // a shown prefix of this length counts anywhere

bool secret_word_bounded(std::string_view text, std::size_t begin, std::size_t end) {
  return (begin == 0 || !std::isalnum(static_cast<unsigned char>(text[begin - 1]))) &&
         (end >= text.size() || !std::isalnum(static_cast<unsigned char>(text[end])));
}

/// A prefix of a secret that is shown cut off: at the end of the text or before an ellipsis.
bool cut_off_at(std::string_view text, std::size_t end) {
  const std::string_view rest = text.substr(end);
  return rest.empty() || rest.starts_with("…") || rest.starts_with("...");
}

struct RedactRange {
  std::size_t begin;
  std::size_t end;
  std::size_t shown;  // the marker's count
};

std::string apply_ranges(std::string_view text, std::vector<RedactRange> ranges) {
  if (ranges.empty()) return std::string(text);
  std::sort(ranges.begin(), ranges.end(), [](const RedactRange& a, const RedactRange& b) { return a.begin < b.begin; });
  std::vector<RedactRange> merged;
  for (const RedactRange& r : ranges) {
    if (!merged.empty() && r.begin < merged.back().end) {
      merged.back().end = std::max(merged.back().end, r.end);
      merged.back().shown = shown_char_count(text.substr(merged.back().begin, merged.back().end - merged.back().begin));
    } else {
      merged.push_back(r);
    }
  }
  std::string out;
  std::size_t copied = 0;
  for (const RedactRange& r : merged) {
    out.append(text.substr(copied, r.begin - copied));
    out += "<redacted: " + std::to_string(r.shown) + (r.shown == 1 ? " character>" : " characters>");
    copied = r.end;
  }
  out.append(text.substr(copied));
  return out;
}

template <class Json>
void scrub_json(const Redactor& redactor, Json& doc);

template <class Json>
void scrub_object(const Redactor& redactor, Json& doc) {
  const auto name = doc.find("name");
  const auto value = doc.find("value");
  if (name != doc.end() && value != doc.end() && name->is_string() && value->is_string() &&
      is_secret_name(name->template get_ref<const std::string&>()) &&
      !starts_with_redaction_marker(value->template get_ref<const std::string&>())) {
    *value = redaction_marker(value->template get_ref<const std::string&>());
  }
  std::vector<std::pair<std::string, std::string>> renamed;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    const bool capitals =
        std::none_of(key.begin(), key.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); });
    if (it->is_string() && capitals && is_secret_name(key)) {
      if (!starts_with_redaction_marker(it->template get_ref<const std::string&>()))
        *it = redaction_marker(it->template get_ref<const std::string&>());
    } else {
      scrub_json(redactor, *it);
    }
    if (!redactor.may_change(key)) continue;
    if (std::string shown = redactor.text(key); shown != key) renamed.emplace_back(key, std::move(shown));
  }
  for (auto& [from, to] : renamed) {
    Json moved = std::move(doc[from]);
    doc.erase(from);
    doc[to] = std::move(moved);
  }
}

template <class Json>
void scrub_json(const Redactor& redactor, Json& doc) {
  if (doc.is_string()) {
    const std::string& s = doc.template get_ref<const std::string&>();
    if (!redactor.may_change(s)) return;
    if (std::string shown = redactor.text(s); shown != s) doc = std::move(shown);
  } else if (doc.is_array()) {
    for (Json& item : doc) scrub_json(redactor, item);
  } else if (doc.is_object()) {
    scrub_object(redactor, doc);
  }
}

}  // namespace

bool is_secret_name(std::string_view name) {
  const std::vector<std::string> words = name_words(name);
  const std::string joined = join(words, "_");
  return std::any_of(std::begin(kSecretNameRules), std::end(kSecretNameRules),
                     [&](const SecretNameRule& rule) { return rule_matches(rule, words, joined); });
}

std::string redaction_marker(std::string_view redacted) {
  const std::size_t n = shown_char_count(redacted);
  return "<redacted: " + std::to_string(n) + (n == 1 ? " character>" : " characters>");
}

bool starts_with_redaction_marker(std::string_view text) {
  constexpr std::string_view kHead = "<redacted: ";
  if (!text.starts_with(kHead)) return false;
  std::size_t i = kHead.size();
  const std::size_t digits = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == digits) return false;
  const std::string_view rest = text.substr(i);
  return rest.starts_with(" character>") || rest.starts_with(" characters>");
}

std::string redact_userinfo(std::string_view text) {
  if (text.find('@') == std::string_view::npos) return std::string(text);
  std::vector<RedactRange> ranges;
  for (const UserinfoSpan& s : userinfo_spans(text))
    ranges.push_back({s.begin, s.end, shown_char_count(text.substr(s.begin, s.end - s.begin))});
  return apply_ranges(text, std::move(ranges));
}

std::string redact_secret_assignments(std::string_view text) {
  std::vector<RedactRange> ranges;
  std::size_t from = 0;
  for (std::size_t eq = text.find('=', from); eq != std::string_view::npos; eq = text.find('=', from)) {
    from = eq + 1;
    std::size_t begin = eq;
    while (begin > 0 && is_env_name_char(text[begin - 1])) --begin;
    if (begin == eq || !is_secret_name(text.substr(begin, eq - begin))) continue;
    std::size_t value = eq + 1;
    if (starts_with_redaction_marker(text.substr(value))) continue;
    std::size_t end = value;
    if (value < text.size() && (text[value] == '\'' || text[value] == '"')) {
      ++value;
      end = std::min(text.find(text[eq + 1], value), text.size());
      if (starts_with_redaction_marker(text.substr(value))) continue;
    } else {
      while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])) &&
             std::string_view("\"'`").find(text[end]) == std::string_view::npos) {
        ++end;
      }
    }
    if (end == value) continue;
    ranges.push_back({value, end, shown_char_count(text.substr(value, end - value))});
    from = end;
  }
  return apply_ranges(text, std::move(ranges));
}

namespace {

/// One line of redact_secret_lines: "[export ]NAME = value" with a secret NAME loses its value.
std::string redact_secret_line(std::string_view line, bool urls) {
  std::size_t i = 0;
  const auto blanks = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  blanks();
  if (line.substr(i).starts_with("export ")) {
    i += 7;
    blanks();
  }
  const std::size_t name = i;
  while (i < line.size() && is_env_name_char(line[i])) ++i;
  const std::size_t name_end = i;
  blanks();
  if (name_end == name || i >= line.size() || line[i] != '=' || !is_secret_name(line.substr(name, name_end - name))) {
    return urls ? redact_userinfo(redact_secret_assignments(line)) : redact_secret_assignments(line);
  }
  std::size_t value = i + 1;
  while (value < line.size() && (line[value] == ' ' || line[value] == '\t')) ++value;
  std::size_t end = line.size();
  while (end > value && std::isspace(static_cast<unsigned char>(line[end - 1]))) --end;
  if (end == value || starts_with_redaction_marker(line.substr(value))) return std::string(line);
  return std::string(line.substr(0, value)) + redaction_marker(line.substr(value, end - value)) +
         std::string(line.substr(end));
}

}  // namespace

std::string redact_secret_lines(std::string_view text, bool urls) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t newline = text.find('\n', pos);
    const std::size_t end = newline == std::string_view::npos ? text.size() : newline;
    out += redact_secret_line(text.substr(pos, end - pos), urls);
    if (newline == std::string_view::npos) break;
    out += '\n';
    pos = newline + 1;
  }
  return out;
}

void Redactor::add_one(std::string_view value, std::size_t shown_length) {
  const auto same = [&](const Secret& s) { return s.value == value; };
  if (value.size() < kMinSecret || std::any_of(m_secrets.begin(), m_secrets.end(), same)) return;
  m_secrets.push_back({std::string(value), shown_length});
  std::stable_sort(m_secrets.begin(), m_secrets.end(),
                   [](const Secret& a, const Secret& b) { return a.value.size() > b.value.size(); });
}

void Redactor::add_secret(std::string_view value) {
  if (starts_with_redaction_marker(value)) return;
  const std::size_t shown = shown_char_count(value);
  add_one(value, shown);
  add_one(trim(value), shown);
  // As the reports print it: control bytes and invalid UTF-8 escaped.
  add_one(printable(value, std::numeric_limits<std::size_t>::max()), shown);
}

void Redactor::add_variable(std::string_view name, std::string_view value) {
  if (is_secret_name(name)) add_secret(value);
  for (const UserinfoSpan& s : userinfo_spans(value)) {
    add_secret(value.substr(s.begin, s.end - s.begin));
    add_secret(value.substr(s.colon + 1, s.end - s.colon - 1));  // the password alone
  }
}

void Redactor::add_env(const EnvSnapshot& env) {
  for (const auto& [name, value] : env.all()) add_variable(name, value);
}

bool Redactor::may_change(std::string_view in) const {
  return !m_secrets.empty() || in.find_first_of("=@") != std::string_view::npos;
}

std::string Redactor::text(std::string_view in) const {
  std::vector<RedactRange> ranges;
  for (const Secret& s : m_secrets) {
    const std::string_view probe = std::string_view(s.value).substr(0, std::min(s.value.size(), kTruncatedProbe));
    for (std::size_t at = in.find(probe); at != std::string_view::npos; at = in.find(probe, at + 1)) {
      std::size_t len = probe.size();
      while (at + len < in.size() && len < s.value.size() && in[at + len] == s.value[len]) ++len;
      const bool whole = len == s.value.size();
      const bool counts = whole ? (len >= kAnywhereSecret || secret_word_bounded(in, at, at + len))
                                : (len >= kLongPrefix || cut_off_at(in, at + len));
      if (counts) ranges.push_back({at, at + len, s.shown_length});
    }
  }
  std::string out = apply_ranges(in, std::move(ranges));
  if (out.find('=') != std::string::npos) out = redact_secret_assignments(out);
  if (out.find('@') != std::string::npos) out = redact_userinfo(out);
  return out;
}

void Redactor::json(nlohmann::json& doc) const { scrub_json(*this, doc); }
void Redactor::json(nlohmann::ordered_json& doc) const { scrub_json(*this, doc); }

EnvSnapshot Redactor::env(const EnvSnapshot& env) const {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : env.all()) {
    const bool whole = is_secret_name(name) && !value.empty() && !starts_with_redaction_marker(value);
    out.emplace(name, whole ? redaction_marker(value) : text(value));
  }
  return EnvSnapshot(std::move(out));
}

}  // namespace preflight
