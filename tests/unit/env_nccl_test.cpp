// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "checks/check.hpp"
#include "checks/env_catalog.hpp"

namespace preflight {
namespace {

using nlohmann::json;

ConfFile conf_file(std::string path, std::string role, std::vector<ConfEntry> entries, std::vector<int> malformed = {}) {
  ConfFileContents contents{std::move(entries), std::move(malformed)};
  return ConfFile{path, std::move(role), Probed<ConfFileContents>::ok(std::move(contents), path)};
}

ConfFile missing_file(std::string path, std::string role, ProbeErrc code, std::string detail) {
  return ConfFile{path, std::move(role), Probed<ConfFileContents>::error(code, std::move(detail), path)};
}

Verdict run_env_nccl(std::map<std::string, std::string> env, std::vector<ConfFile> files = {}) {
  RankFacts facts;
  facts.env = EnvSnapshot(std::move(env));
  facts.nccl_conf.files = std::move(files);
  const Options options;
  const CheckSpec* spec = find_check("env.nccl");
  EXPECT_NE(spec, nullptr);
  return run_check(*spec, CheckContext{facts, options, Profile::Node});
}

const json* variable(const Verdict& v, std::string_view name) {
  for (const json& var : v.evidence.at("variables")) {
    if (var.at("name") == name) return &var;
  }
  return nullptr;
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

TEST(EnvNcclCatalog, BuiltinLoadsWithoutDuplicates) {
  const EnvCatalog& catalog = builtin_env_catalog();  // throws if the embedded file is malformed
  EXPECT_GT(catalog.vars().size(), 200u);
  const EnvVarSpec* p2p = catalog.find("NCCL_P2P_DISABLE");
  ASSERT_NE(p2p, nullptr);
  EXPECT_EQ(p2p->consumer, "nccl");
  EXPECT_EQ(p2p->grammar.kind, Grammar::Kind::Int);
  EXPECT_EQ(catalog.find("NCCL_TESTS_SPLIT_MASK")->name, "NCCL_TESTS_*");
  EXPECT_TRUE(catalog.find("NCCL_TIMEOUT")->no_effect);
  EXPECT_EQ(catalog.find("NCCL_BLOCKING_WAIT")->alias_of, "TORCH_NCCL_BLOCKING_WAIT");
  EXPECT_EQ(catalog.find("NCCL_NO_SUCH_THING"), nullptr);
}

TEST(EnvNcclCatalog, WarnIfValuesAreReadableByTheirGrammar) {
  for (const EnvVarSpec& spec : builtin_env_catalog().vars()) {
    for (const std::string& v : spec.warn_if) {
      const ValueReading r = read_value(spec.grammar, v);
      EXPECT_EQ(r.status, Status::Pass) << spec.name << " warn_if=" << v;
      EXPECT_EQ(r.canonical, v) << spec.name << " warn_if=" << v;
    }
  }
}

TEST(EnvNcclCatalog, Suggestions) {
  const EnvCatalog& catalog = builtin_env_catalog();
  const auto close = catalog.suggestions("NCCL_SOCKET_IFNAM", 2);
  ASSERT_FALSE(close.empty());
  EXPECT_EQ(close.front(), "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(catalog.suggestions("NCCL_P2P_DISABEL", 2).front(), "NCCL_P2P_DISABLE");
  EXPECT_TRUE(catalog.suggestions("NCCL_COMPLETELY_DIFFERENT", 2).empty());
  // A name longer or shorter than a catalog name by more than the distance allowed is never
  // suggested it, however the letters compare: NCCL_SOCKET_IFNAME plus three letters, at 2.
  EXPECT_TRUE(catalog.suggestions("NCCL_SOCKET_IFNAMEXYZ", 2).empty());
  EXPECT_EQ(catalog.suggestions("NCCL_SOCKET_IFNAMEXY", 2).front(), "NCCL_SOCKET_IFNAME");
  // A name of a hundred thousand letters in a known family: no suggestion (and no quadratic work).
  EXPECT_TRUE(catalog.suggestions("NCCL_" + std::string(100000, 'A'), 12500).empty());
}

TEST(EnvNcclCatalog, MalformedCatalogIsRejected) {
  const std::string header = "# comment\nname\tconsumer\ttype\tdefault\trule\tnote\n";
  struct Case {
    std::string text;
    const char* error;
  };
  const Case cases[] = {
      {"NCCL_A\tnccl\tint\t-\t-\t-\n", "header"},
      {header + "NCCL_A\tnccl\tint\t-\t-\n", "line 3: expected 6"},
      {header + "NCCL_A\tnccl\tfloat\t-\t-\t-\n", "unknown type"},
      {header + "NCCL_A\tnccl\tint\t-\tsometimes\t-\n", "unknown rule"},
      {header + "NCCL_A\tnccl\tint\t-\t-\t-\nNCCL_A\tnccl\tint\t-\t-\t-\n", "duplicate name NCCL_A"},
      {header + "NCCL A\tnccl\tint\t-\t-\t-\n", "not a variable name"},
      {header + "NCCL_A\tnccl\tint\t-\talias_of=NCCL_B\t-\n", "alias_of names unknown"},
      {header, "no variables"},
  };
  for (const Case& c : cases) {
    std::string error;
    EXPECT_FALSE(parse_env_catalog(c.text, error)) << c.text;
    EXPECT_TRUE(has(error, c.error)) << error;
  }
  std::string error;
  const auto ok = parse_env_catalog(header + "NCCL_A\tnccl\tint:0..1\t0\twarn_if=1,debug_only\tnote\n", error);
  ASSERT_TRUE(ok) << error;
  EXPECT_TRUE(ok->vars()[0].debug_only);
  EXPECT_EQ(ok->vars()[0].warn_if, std::vector<std::string>{"1"});
}

TEST(EnvNccl, NoVariablesPass) {
  const Verdict v = run_env_nccl({{"PATH", "/usr/bin"}});
  EXPECT_EQ(v.status, Status::Pass);
  EXPECT_EQ(v.summary, "no NCCL/torch/CUDA variables set");
  EXPECT_TRUE(v.evidence.at("variables").empty());
}

TEST(EnvNccl, CleanValuesPass) {
  const Verdict v = run_env_nccl({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_DEBUG", "WARN"}, {"NCCL_IB_HCA", "mlx5_0"},
                                  {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"}, {"TORCH_NCCL_BLOCKING_WAIT", "true"},
                                  {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"NCCL_BUFFSIZE", "0x400000"}});
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "7 NCCL/torch/CUDA variable(s) set")) << v.summary;
  EXPECT_EQ(variable(v, "NCCL_BUFFSIZE")->at("reads_as"), "4194304");
  EXPECT_EQ(variable(v, "TORCH_NCCL_BLOCKING_WAIT")->at("reads_as"), "true");
}

TEST(EnvNccl, TrueWhereNcclWantsAnIntegerFails) {
  const Verdict v = run_env_nccl({{"NCCL_P2P_DISABLE", "true"}});
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "NCCL_P2P_DISABLE=true (environment)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "as 0, the opposite")) << v.summary;
  EXPECT_EQ(v.remedy, "export NCCL_P2P_DISABLE=1;");
  const json* var = variable(v, "NCCL_P2P_DISABLE");
  ASSERT_NE(var, nullptr);
  EXPECT_EQ(var->at("reads_as"), "0");
  EXPECT_EQ(var->at("source"), "environment");
  EXPECT_EQ(var->at("consumer"), "nccl");
  EXPECT_EQ(var->at("status"), "FAIL");
}

TEST(EnvNccl, MisreadIntegersWarn) {
  const Verdict octal = run_env_nccl({{"NCCL_BUFFSIZE", "010"}});
  EXPECT_EQ(octal.status, Status::Warn);
  EXPECT_TRUE(has(octal.summary, "octal: 8")) << octal.summary;
  const Verdict no = run_env_nccl({{"NCCL_IB_DISABLE", "no"}});
  EXPECT_EQ(no.status, Status::Warn);
  EXPECT_EQ(no.remedy, "export NCCL_IB_DISABLE=0;");
  const Verdict ib = run_env_nccl({{"NCCL_IB_TIMEOUT", "28"}});
  EXPECT_EQ(ib.status, Status::Warn);
  EXPECT_TRUE(has(ib.summary, "1..24")) << ib.summary;
}

TEST(EnvNccl, TorchValuesThatRaiseFail) {
  const Verdict b = run_env_nccl({{"TORCH_NCCL_BLOCKING_WAIT", "maybe"}});
  EXPECT_EQ(b.status, Status::Fail);
  EXPECT_TRUE(has(b.summary, "torch.distributed will raise at init")) << b.summary;
  EXPECT_TRUE(has(b.remedy, "1 or 0")) << b.remedy;
  const Verdict a = run_env_nccl({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "5"}});
  EXPECT_EQ(a.status, Status::Fail);
  EXPECT_TRUE(has(a.summary, "outside 0..3")) << a.summary;
  const Verdict d = run_env_nccl({{"TORCH_DISTRIBUTED_DEBUG", "verbose"}});
  EXPECT_EQ(d.status, Status::Fail);
}

TEST(EnvNccl, SettingsThatHideFailuresWarn) {
  const Verdict a = run_env_nccl({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}});
  EXPECT_EQ(a.status, Status::Warn);
  EXPECT_TRUE(has(a.summary, "hangs the job")) << a.summary;
  EXPECT_EQ(a.remedy, "unset TORCH_NCCL_ASYNC_ERROR_HANDLING; (the default is 3)");
  const Verdict m = run_env_nccl({{"TORCH_NCCL_ENABLE_MONITORING", "false"}});
  EXPECT_EQ(m.status, Status::Warn);
  EXPECT_TRUE(has(m.summary, "heartbeat monitor")) << m.summary;
  for (const auto& [name, value] : std::map<std::string, std::string>{
           {"TORCH_DISTRIBUTED_DEBUG", "detail"}, {"CUDA_LAUNCH_BLOCKING", "1"}, {"NCCL_DEBUG", "info"},
           {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "^LL128"}, {"CUDA_INJECTION64_PATH", "/opt/tool.so"}}) {
    const Verdict v = run_env_nccl({{name, value}});
    EXPECT_EQ(v.status, Status::Warn) << name;
    EXPECT_TRUE(has(v.summary, name)) << v.summary;
    EXPECT_TRUE(has(v.remedy, "unset " + name)) << v.remedy;
  }
}

TEST(EnvNccl, LegacyTorchNamesWarnNamingTheNewName) {
  const Verdict v = run_env_nccl({{"NCCL_ASYNC_ERROR_HANDLING", "0"}});
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "deprecated PyTorch name of TORCH_NCCL_ASYNC_ERROR_HANDLING")) << v.summary;
  EXPECT_TRUE(has(v.summary, "hangs the job")) << v.summary;  // the new name's rules apply to the alias
  EXPECT_TRUE(has(v.remedy, "export TORCH_NCCL_ASYNC_ERROR_HANDLING=0;")) << v.remedy;
  const Verdict both = run_env_nccl({{"NCCL_BLOCKING_WAIT", "1"}, {"TORCH_NCCL_BLOCKING_WAIT", "0"}});
  EXPECT_TRUE(has(both.summary, "both set and differ")) << both.summary;
}

TEST(EnvNccl, UnknownNamesWarn) {
  const Verdict typo = run_env_nccl({{"NCCL_SOCKET_IFNAM", "eth0"}});
  EXPECT_EQ(typo.status, Status::Warn);
  EXPECT_TRUE(has(typo.summary, "did you mean NCCL_SOCKET_IFNAME?")) << typo.summary;
  EXPECT_EQ(typo.remedy, "unset NCCL_SOCKET_IFNAM; export NCCL_SOCKET_IFNAME=eth0;");
  const Verdict timeout = run_env_nccl({{"NCCL_TIMEOUT", "1800"}});
  EXPECT_EQ(timeout.status, Status::Warn);
  EXPECT_TRUE(has(timeout.summary, "has no effect")) << timeout.summary;
  EXPECT_EQ(timeout.remedy, "unset NCCL_TIMEOUT;");
  const Verdict torch_new = run_env_nccl({{"TORCH_NCCL_SOME_NEW_KNOB", "1"}, {"CUDA_SOMETHING", "x"}});
  EXPECT_EQ(torch_new.status, Status::Pass) << torch_new.summary;  // no near miss: not a typo
  const Verdict torch_typo = run_env_nccl({{"TORCH_NCCL_BLOCKING_WAlT", "1"}});
  EXPECT_EQ(torch_typo.status, Status::Warn);
  EXPECT_TRUE(has(torch_typo.summary, "TORCH_NCCL_BLOCKING_WAIT")) << torch_typo.summary;
}

TEST(EnvNccl, EnumCaseAndLegacyLevels) {
  const Verdict lower = run_env_nccl({{"NCCL_P2P_LEVEL", "nvl"}});
  EXPECT_EQ(lower.status, Status::Warn);
  EXPECT_EQ(lower.remedy, "export NCCL_P2P_LEVEL=NVL;");
  const Verdict legacy = run_env_nccl({{"NCCL_NET_GDR_LEVEL", "3"}});
  EXPECT_EQ(legacy.status, Status::Warn);
  EXPECT_TRUE(has(legacy.summary, "legacy")) << legacy.summary;
}

TEST(EnvNccl, GarbageValuesArePrintedSafely) {
  const std::string garbage = std::string("\x01\xff\xfe\x1b[31m", 8) + std::string(100000, 'x');
  const Verdict v = run_env_nccl({{"NCCL_SOCKET_IFNAME", garbage}, {"NCCL_P2P_DISABLE", garbage}});
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_LT(v.summary.size(), 2000u);
  EXPECT_TRUE(has(v.summary, "\\x01\\xFF\\xFE\\x1B")) << v.summary;
  EXPECT_NO_THROW((void)v.evidence.dump());  // valid UTF-8 throughout
}

TEST(EnvNccl, ConfFileValuesAndPrecedence) {
  const std::vector<ConfFile> files = {
      conf_file("/home/u/.nccl.conf", "user", {{"NCCL_P2P_DISABLE", "true", 2}, {"NCCL_DEBUG", "WARN", 3}}),
      conf_file("/etc/nccl.conf", "system", {{"NCCL_P2P_DISABLE", "1", 1}, {"NCCL_DEBUG", "INFO", 2}, {"NCCL_SHM_DISABLE", "1", 3}}),
  };
  const Verdict v = run_env_nccl({}, files);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "NCCL_P2P_DISABLE=true (/home/u/.nccl.conf:2)")) << v.summary;
  EXPECT_EQ(v.remedy, "Write NCCL_P2P_DISABLE=1 on line 2 of /home/u/.nccl.conf.");
  EXPECT_EQ(variable(v, "NCCL_DEBUG")->at("source"), "/home/u/.nccl.conf:3");  // the user file beats the system file
  EXPECT_EQ(variable(v, "NCCL_SHM_DISABLE")->at("source"), "/etc/nccl.conf:3");

  const Verdict env_wins = run_env_nccl({{"NCCL_P2P_DISABLE", "1"}}, files);
  EXPECT_EQ(env_wins.status, Status::Pass) << env_wins.summary;
  EXPECT_EQ(variable(env_wins, "NCCL_P2P_DISABLE")->at("source"), "environment");
}

TEST(EnvNccl, ConfFileLinesNcclCannotUse) {
  const Verdict v = run_env_nccl({}, {conf_file("/etc/nccl.conf", "system", {{"NCCL_IB_TIMEOUT ", " 22", 4}}, {7})});
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "/etc/nccl.conf:4 sets 'NCCL_IB_TIMEOUT '")) << v.summary;
  EXPECT_TRUE(has(v.summary, "line(s) 7")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "Write NCCL_IB_TIMEOUT=22 without spaces on line 4 of /etc/nccl.conf.")) << v.remedy;
}

TEST(EnvNccl, ConfFileReadProblems) {
  const Verdict absent = run_env_nccl({}, {missing_file("/root/.nccl.conf", "user", ProbeErrc::NotFound, "does not exist"),
                                           missing_file("/etc/nccl.conf", "system", ProbeErrc::NotFound, "does not exist")});
  EXPECT_EQ(absent.status, Status::Pass) << absent.summary;
  EXPECT_EQ(absent.evidence.at("conf_files").size(), 2u);

  const Verdict named = run_env_nccl({{"NCCL_CONF_FILE", "/nope.conf"}},
                                     {missing_file("/nope.conf", "NCCL_CONF_FILE", ProbeErrc::NotFound, "does not exist")});
  EXPECT_EQ(named.status, Status::Warn);
  EXPECT_TRUE(has(named.summary, "NCCL_CONF_FILE=/nope.conf does not exist")) << named.summary;

  const Verdict denied = run_env_nccl({}, {missing_file("/etc/nccl.conf", "system", ProbeErrc::PermissionDenied, "permission denied")});
  EXPECT_EQ(denied.status, Status::Warn);
  EXPECT_TRUE(has(denied.summary, "silently skips it")) << denied.summary;

  const Verdict broken = run_env_nccl({}, {missing_file("/etc/nccl.conf", "system", ProbeErrc::Unreadable, "Is a directory")});
  EXPECT_EQ(broken.status, Status::Unknown);
  EXPECT_TRUE(has(broken.summary, "could not read /etc/nccl.conf (Is a directory)")) << broken.summary;
}

TEST(EnvNccl, ExplainNamesEveryFinding) {
  const CheckSpec* spec = find_check("env.nccl");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->scope, Scope::Rank);
  for (const char* word : {"strtoll", "NCCL_CONF_FILE", "/etc/nccl.conf", "FAIL", "WARN", "UNKNOWN", "NCCL_TIMEOUT",
                           "TORCH_NCCL_ASYNC_ERROR_HANDLING=0", "CUDA_INJECTION64_PATH", "export NCCL_P2P_DISABLE=1"}) {
    EXPECT_TRUE(has(std::string(spec->explain), word)) << word;
  }
}

}  // namespace
}  // namespace preflight
