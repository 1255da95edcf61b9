// SPDX-License-Identifier: MIT
// preflight-docs check|update SOURCE_DIR: the parts of README.md, docs/checks.md and
// packaging/preflight.1 generated from the check table (report/check_docs.hpp). `check` exits 1
// naming each file that differs (the test docs.generated); `update` rewrites them (the build
// target update-docs).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "report/check_docs.hpp"

namespace {

struct Target {
  const char* file;
  preflight::GeneratedBlock block;
};

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return static_cast<bool>(in) || in.eof();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "check" && mode != "update") {
    std::cerr << "usage: preflight-docs check|update SOURCE_DIR\n";
    return 2;
  }
  const std::string root = argv[2];
  const std::vector<Target> targets = {{"README.md", preflight::readme_check_table()},
                                       {"docs/checks.md", preflight::finding_code_table()},
                                       {"packaging/preflight.1", preflight::man_check_entries()}};
  int stale = 0;
  for (const Target& t : targets) {
    const std::string path = root + "/" + t.file;
    std::string text;
    if (!read_file(path, text)) {
      std::cerr << "preflight-docs: cannot read " << path << "\n";
      return 2;
    }
    const std::optional<std::string> generated = preflight::with_generated(text, t.block);
    if (!generated) {
      std::cerr << "preflight-docs: " << path << " needs the lines\n  " << t.block.begin << "\n  " << t.block.end
                << "\n(once each, in this order) around the generated " << t.block.name << "\n";
      return 2;
    }
    if (*generated == text) continue;
    if (mode == "check") {
      std::cerr << "preflight-docs: " << t.file << ": the " << t.block.name
                << " differs from the check table; run `cmake --build build --target update-docs` and commit it\n";
      ++stale;
      continue;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << *generated;
    if (!out.flush()) {
      std::cerr << "preflight-docs: cannot write " << path << "\n";
      return 2;
    }
    std::cout << "preflight-docs: updated " << t.file << "\n";
  }
  return stale == 0 ? 0 : 1;
}
