// SPDX-License-Identifier: MIT
// A fresh directory under the temporary directory for one test, removed with everything in it
// afterwards, and the few calls that build a tree in it (paths relative to it, written "/a/b").
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace preflight::testing {

class ScratchDir {
 public:
  /// `tag` names the directory (preflight-<tag>-XXXXXX); path() is "" when it could not be made.
  explicit ScratchDir(const std::string& tag) {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("preflight-" + tag + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) != nullptr) m_path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!m_path.empty()) std::filesystem::remove_all(m_path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return m_path; }
  void dir(const std::string& rel) const { std::filesystem::create_directories(m_path + rel); }
  void file(const std::string& rel, const std::string& text = "x\n") const {
    std::filesystem::create_directories(std::filesystem::path(m_path + rel).parent_path());
    std::ofstream(m_path + rel, std::ios::binary) << text;
  }
  void link(const std::string& rel, const std::string& target) const {
    std::filesystem::create_directories(std::filesystem::path(m_path + rel).parent_path());
    std::filesystem::create_symlink(target, m_path + rel);
  }

 private:
  std::string m_path;
};

}  // namespace preflight::testing
