// SPDX-License-Identifier: MIT
// The INI config file (--config FILE, cli/cli.cpp parse_cli): the input is the file's text,
// handed over as /proc/self/fd/N of an in-memory file. A bad file is a UsageError (exit 2), never
// another exception. The first line is also read as a parameter count (parse_count).
#include <sys/mman.h>
#include <unistd.h>

#include "cli/cli.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = memfd_create("preflight-fuzz-config", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(ftruncate(fd, 0) == 0);
  FUZZ_CHECK(pwrite(fd, data, size, 0) == static_cast<ssize_t>(size));
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"preflight", "--config", path},
        std::vector<std::string>{"preflight", "run", "--profile", "node", "--config", path},
        std::vector<std::string>{"preflight", "merge", "--config", path, "a.json"}}) {
    try {
      (void)parse_cli(argv);
    } catch (const UsageError&) {}
  }
  (void)parse_count(fuzz::first_line(fuzz::text(data, size)).first);
  return 0;
}
