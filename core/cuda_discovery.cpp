// SPDX-License-Identifier: MIT
#include "core/cuda_discovery.hpp"

#include <cctype>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "core/version.hpp"

namespace preflight {
namespace {

bool looks_binary(std::string_view text) {
  for (const char c : text) {
    if (c == '\0') return true;
  }
  return false;
}

template <typename T>
Probed<T> parse_error(std::string detail) {
  return Probed<T>::error(ProbeErrc::ParseError, std::move(detail));
}

// The string after `name = ` or `name: Type = ` on a line of torch/version.py. The value is returned
// raw (quotes kept) so the caller can tell 'x' from None.
std::optional<std::string_view> python_assignment(std::string_view line, std::string_view name) {
  line = trim(line);
  if (line.substr(0, name.size()) != name) return std::nullopt;
  std::string_view rest = line.substr(name.size());
  if (rest.empty() || (rest.front() != ' ' && rest.front() != '\t' && rest.front() != ':' && rest.front() != '='))
    return std::nullopt;
  const std::size_t eq = rest.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  std::string_view before = trim(rest.substr(0, eq));
  if (!before.empty() && before.front() != ':') return std::nullopt;     // `cuda_x = ...` is not `cuda`
  if (eq + 1 < rest.size() && rest[eq + 1] == '=') return std::nullopt;  // a comparison
  std::string_view value = trim(rest.substr(eq + 1));
  if (const std::size_t hash = value.find('#');
      hash != std::string_view::npos && (value.empty() || (value.front() != '\'' && value.front() != '"')))
    value = trim(value.substr(0, hash));
  return value;
}

// 'text' or "text" -> text; None -> ""; nullopt otherwise.
std::optional<std::string> python_string_or_none(std::string_view value, bool& is_none) {
  is_none = false;
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"')) {
    const char q = value.front();
    const std::size_t end = value.find(q, 1);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view after = trim(value.substr(end + 1));
    if (!after.empty() && after.front() != '#') return std::nullopt;
    return std::string(value.substr(1, end - 1));
  }
  if (value == "None") {
    is_none = true;
    return std::string();
  }
  return std::nullopt;
}

}  // namespace

Probed<std::string> parse_cuda_version_json(std::string_view text) {
  using R = Probed<std::string>;
  if (looks_binary(text)) return parse_error<std::string>("binary contents, not JSON");
  nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return parse_error<std::string>("not valid JSON");
  if (!doc.is_object()) return parse_error<std::string>("not a JSON object");
  for (const char* key : {"cuda_cudart", "cuda"}) {
    const auto it = doc.find(key);
    if (it == doc.end()) continue;
    if (!it->is_object() || !it->contains("version") || !(*it)["version"].is_string())
      return parse_error<std::string>(std::string("\"") + key + "\" has no string \"version\"");
    const std::string v = (*it)["version"].get<std::string>();
    if (!Version::parse(v))
      return parse_error<std::string>(std::string("\"") + key + ".version\" is not a version: \"" + printable(v, 40) +
                                      "\"");
    return R::ok(v, std::string(key) + ".version");
  }
  return parse_error<std::string>("neither \"cuda_cudart\" nor \"cuda\" has a version");
}

Probed<std::string> parse_cuda_version_txt(std::string_view text) {
  using R = Probed<std::string>;
  if (looks_binary(text)) return parse_error<std::string>("binary contents");
  for (const std::string_view raw : split(text, '\n')) {
    const std::string_view line = trim(raw);
    if (line.empty()) continue;
    constexpr std::string_view kPrefix = "CUDA Version ";
    if (line.substr(0, kPrefix.size()) != kPrefix)
      return parse_error<std::string>("expected \"CUDA Version X.Y.Z\", found \"" + printable(line, 60) + "\"");
    const std::string_view v = trim(line.substr(kPrefix.size()));
    if (!Version::parse(v)) return parse_error<std::string>("not a version: \"" + printable(v, 40) + "\"");
    return R::ok(std::string(v), "version.txt");
  }
  return parse_error<std::string>("empty");
}

Probed<TorchVersionPy> parse_torch_version_py(std::string_view text) {
  using R = Probed<TorchVersionPy>;
  if (looks_binary(text)) return parse_error<TorchVersionPy>("binary contents, not Python source");
  TorchVersionPy out;
  bool have_version = false, have_cuda = false;
  for (const std::string_view line : split(text, '\n')) {
    bool none = false;
    if (auto v = python_assignment(line, "__version__")) {
      auto s = python_string_or_none(*v, none);
      if (!s || none || s->empty())
        return parse_error<TorchVersionPy>("__version__ is not a string: " + printable(*v, 60));
      out.version = *s;
      have_version = true;
    } else if (auto c = python_assignment(line, "cuda")) {
      auto s = python_string_or_none(*c, none);
      if (!s) return parse_error<TorchVersionPy>("cuda is neither a string nor None: " + printable(*c, 60));
      if (!none && !Version::parse(*s))
        return parse_error<TorchVersionPy>("cuda is not a version: \"" + printable(*s, 40) + "\"");
      out.cuda = *s;
      have_cuda = true;
    } else if (auto h = python_assignment(line, "hip")) {
      if (auto s = python_string_or_none(*h, none)) out.hip = *s;
    }
  }
  if (!have_version) return parse_error<TorchVersionPy>("no __version__ = line");
  if (!have_cuda) return parse_error<TorchVersionPy>("no cuda = line");
  return R::ok(std::move(out), "torch/version.py");
}

std::string normalize_project_name(std::string_view name) {
  std::string out;
  bool sep = false;
  for (const char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      sep = true;
      continue;
    }
    if (sep && !out.empty()) out += '-';
    sep = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::optional<DistInfoName> parse_dist_info_name(std::string_view dir_name) {
  constexpr std::string_view kSuffix = ".dist-info";
  if (dir_name.size() <= kSuffix.size() || dir_name.substr(dir_name.size() - kSuffix.size()) != kSuffix)
    return std::nullopt;
  const std::string_view stem = dir_name.substr(0, dir_name.size() - kSuffix.size());
  const std::size_t dash = stem.find('-');  // names are escaped with '_', versions have no '-'
  if (dash == 0 || dash == std::string_view::npos || dash + 1 >= stem.size()) return std::nullopt;
  const std::string_view version = stem.substr(dash + 1);
  if (version.find('-') != std::string_view::npos) return std::nullopt;
  if (!std::isdigit(static_cast<unsigned char>(version.front()))) return std::nullopt;
  return DistInfoName{normalize_project_name(stem.substr(0, dash)), std::string(version)};
}

std::optional<std::string> metadata_field(std::string_view metadata, std::string_view field) {
  for (std::string_view line : split(metadata, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) break;  // end of the headers
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (to_lower(trim(line.substr(0, colon))) == to_lower(field)) return std::string(trim(line.substr(colon + 1)));
  }
  return std::nullopt;
}

std::vector<std::string> requires_dist_pins(std::string_view metadata, std::string_view prefix) {
  std::vector<std::string> pins;
  for (std::string_view line : split(metadata, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) break;
    constexpr std::string_view kField = "Requires-Dist:";
    if (line.substr(0, kField.size()) != kField) continue;
    std::string_view req = trim(line.substr(kField.size()));
    if (const std::size_t semi = req.find(';'); semi != std::string_view::npos) req = trim(req.substr(0, semi));
    const std::size_t eq = req.find("==");
    if (eq == std::string_view::npos) continue;
    std::string name = normalize_project_name(trim(req.substr(0, eq)));
    const std::string_view version = trim(req.substr(eq + 2));
    if (version.empty() || name.substr(0, prefix.size()) != prefix) continue;
    if (version.find_first_of(" ,<>=!*") != std::string_view::npos) continue;
    pins.push_back(name + "==" + std::string(version));
  }
  return pins;
}

std::optional<std::string> soname_version(std::string_view file_name, std::string_view stem) {
  if (file_name.size() <= stem.size() + 1 || file_name.substr(0, stem.size()) != stem || file_name[stem.size()] != '.')
    return std::nullopt;
  const std::string_view v = file_name.substr(stem.size() + 1);
  if (!Version::parse(v)) return std::nullopt;
  return std::string(v);
}

LdSoConf parse_ld_so_conf(std::string_view text) {
  LdSoConf out;
  for (std::string_view line : split(text, '\n')) {
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::vector<std::string_view> words = split_ws(line);
    if (words.front() == "include") {
      for (std::size_t i = 1; i < words.size(); ++i) out.includes.emplace_back(words[i]);
      continue;
    }
    if (words.front() == "hwcap") continue;
    std::string normalised(line);
    for (char& c : normalised) {
      if (c == ':' || c == ',' || c == '\t') c = ' ';
    }
    for (const std::string_view dir : split_ws(normalised)) {
      std::string d(dir);
      while (d.size() > 1 && d.back() == '/') d.pop_back();
      out.dirs.push_back(std::move(d));
    }
  }
  return out;
}

std::vector<std::string> split_library_path(std::string_view value) {
  std::vector<std::string> out;
  std::string normalised(value);
  for (char& c : normalised) {
    if (c == ';') c = ':';
  }
  for (const std::string_view entry : split(normalised, ':')) {
    std::string d(trim(entry));
    if (d.empty() || d.find('$') != std::string::npos) continue;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    out.push_back(std::move(d));
  }
  return out;
}

std::optional<std::string> python_version_from_name(std::string_view exe_name) {
  constexpr std::string_view kPrefix = "python";
  if (exe_name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view v = exe_name.substr(kPrefix.size());
  const auto parsed = Version::parse(v);
  if (!parsed || parsed->size() != 2) return std::nullopt;
  return std::string(v);
}

}  // namespace preflight
