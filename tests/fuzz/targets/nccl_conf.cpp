// SPDX-License-Identifier: MIT
// NCCL's configuration files (~/.nccl.conf, /etc/nccl.conf, $NCCL_CONF_FILE): parse_nccl_conf,
// is_env_name; and /etc/passwd as NCCL's getpwuid() reads it: passwd_home.
#include "core/env_grammar.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const ConfFileContents c = parse_nccl_conf(in);
  for (const ConfEntry& e : c.entries) {
    // setEnvFile cuts name and value at 1023 bytes and at a NUL byte; the name ends at the first '='.
    FUZZ_CHECK(e.name.size() <= 1023 && e.value.size() <= 1023);
    FUZZ_CHECK(e.name.find('\0') == std::string::npos && e.value.find('\0') == std::string::npos);
    FUZZ_CHECK(e.name.find('=') == std::string::npos);
    FUZZ_CHECK(e.line >= 1);
    (void)is_env_name(e.name);
  }
  for (unsigned uid : {0u, 1000u, 65534u}) (void)passwd_home(in, uid);
  return 0;
}
