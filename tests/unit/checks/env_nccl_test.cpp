// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "checks/check.hpp"
#include "checks/env_catalog.hpp"

namespace preflight {
namespace checks_env_nccl_test {
namespace {

using nlohmann::json;

ConfFile conf_file(std::string path, std::string role, std::vector<ConfEntry> entries,
                   std::vector<int> malformed = {}) {
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

Verdict judge(const RankFacts& facts) {
  const Options options;
  return run_check(*find_check("env.nccl"), CheckContext{facts, options, Profile::Node});
}

RankFacts with_env(std::map<std::string, std::string> env) {
  RankFacts facts;
  facts.env = EnvSnapshot(std::move(env));
  return facts;
}

// The facts of a job whose libnccl.so.2 (NCCL `version`) holds exactly `names`.
RankFacts with_library(std::map<std::string, std::string> env, std::vector<std::string> names,
                       const std::string& version = "2.30.7") {
  RankFacts facts = with_env(std::move(env));
  std::sort(names.begin(), names.end());
  facts.nccl_conf.names.library = "/usr/lib/libnccl.so.2";
  facts.nccl_conf.names.version = version;
  facts.nccl_conf.names.names = Probed<std::vector<std::string>>::ok(std::move(names), ".rodata");
  return facts;
}

const json* variable(const Verdict& v, std::string_view name) {
  for (const json& var : v.evidence.at("variables")) {
    if (var.at("name") == name) return &var;
  }
  return nullptr;
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// The verdict's finding with `code` (the first, where it is there several times), or nullptr.
const Finding* coded(const Verdict& v, std::string_view code) {
  for (const Finding& f : v.findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

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
  const Verdict v = run_env_nccl({{"NCCL_P2P_DISABLE", "1"},
                                  {"NCCL_DEBUG", "WARN"},
                                  {"NCCL_IB_HCA", "mlx5_0"},
                                  {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"},
                                  {"TORCH_NCCL_BLOCKING_WAIT", "true"},
                                  {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                                  {"NCCL_BUFFSIZE", "0x400000"}});
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "7 NCCL/torch/CUDA variable(s) set")) << v.summary;
  EXPECT_EQ(variable(v, "NCCL_BUFFSIZE")->at("reads_as"), "4194304");
  EXPECT_EQ(variable(v, "TORCH_NCCL_BLOCKING_WAIT")->at("reads_as"), "true");
}

TEST(EnvNccl, TrueWhereNcclWantsAnIntegerFails) {
  const Verdict v = run_env_nccl({{"NCCL_P2P_DISABLE", "true"}});
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "env.nccl/invalid-value");
  EXPECT_EQ(v.finding.params["setting"], "NCCL_P2P_DISABLE=true (environment)");
  EXPECT_EQ(v.finding.params["set"], "export NCCL_P2P_DISABLE=1");
  EXPECT_TRUE(has(v.summary, "NCCL_P2P_DISABLE=true (environment)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "as 0, the opposite")) << v.summary;
  EXPECT_EQ(v.remedy, "export NCCL_P2P_DISABLE=1");
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
  EXPECT_EQ(octal.finding.code, "env.nccl/misread-value");
  EXPECT_EQ(octal.finding.params["setting"], "NCCL_BUFFSIZE=010 (environment)");
  EXPECT_TRUE(has(octal.summary, "octal: 8")) << octal.summary;
  const Verdict no = run_env_nccl({{"NCCL_IB_DISABLE", "no"}});
  EXPECT_EQ(no.status, Status::Warn);
  EXPECT_EQ(no.finding.code, "env.nccl/misread-value");
  EXPECT_EQ(no.finding.params["set"], "export NCCL_IB_DISABLE=0");
  EXPECT_EQ(no.remedy, "export NCCL_IB_DISABLE=0");
  const Verdict ib = run_env_nccl({{"NCCL_IB_TIMEOUT", "32"}});
  EXPECT_EQ(ib.status, Status::Warn);
  EXPECT_TRUE(has(ib.summary, "1..31")) << ib.summary;
}

TEST(EnvNccl, TorchValuesThatRaiseFail) {
  const Verdict b = run_env_nccl({{"TORCH_NCCL_BLOCKING_WAIT", "maybe"}});
  EXPECT_EQ(b.status, Status::Fail);
  EXPECT_EQ(b.finding.code, "env.nccl/invalid-value");
  EXPECT_EQ(b.finding.params["setting"], "TORCH_NCCL_BLOCKING_WAIT=maybe (environment)");
  EXPECT_TRUE(has(b.summary, "torch.distributed will raise at init")) << b.summary;
  EXPECT_TRUE(has(b.remedy, "1 or 0")) << b.remedy;
  const Verdict a = run_env_nccl({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "5"}});
  EXPECT_EQ(a.status, Status::Warn);  // getCvarInt applies no range: torch does not raise
  EXPECT_EQ(a.finding.code, "env.nccl/misread-value");
  EXPECT_TRUE(has(a.summary, "outside 0..3; torch applies no range check")) << a.summary;
  const Verdict d = run_env_nccl({{"TORCH_DISTRIBUTED_DEBUG", "verbose"}});
  EXPECT_EQ(d.status, Status::Fail);
  EXPECT_EQ(d.finding.code, "env.nccl/invalid-value");
}

TEST(EnvNccl, SettingsThatHideFailuresWarn) {
  const Verdict a = run_env_nccl({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}});
  EXPECT_EQ(a.status, Status::Warn);
  EXPECT_EQ(a.finding.code, "env.nccl/discouraged-value");
  EXPECT_EQ(a.finding.params["reader"], "torch");
  EXPECT_EQ(a.finding.params["default_value"], "3");
  EXPECT_EQ(a.finding.params["unset"], "unset TORCH_NCCL_ASYNC_ERROR_HANDLING");
  EXPECT_TRUE(has(a.summary, "hangs the job")) << a.summary;
  EXPECT_EQ(a.remedy, "unset TORCH_NCCL_ASYNC_ERROR_HANDLING");
  EXPECT_TRUE(has(a.summary, "(the default is 3)")) << a.summary;
  const Verdict m = run_env_nccl({{"TORCH_NCCL_ENABLE_MONITORING", "false"}});
  EXPECT_EQ(m.status, Status::Warn);
  EXPECT_TRUE(has(m.summary, "heartbeat monitor")) << m.summary;
  struct Case {
    std::string name, value, code;
  };
  for (const Case& c : std::vector<Case>{{"TORCH_DISTRIBUTED_DEBUG", "detail", "env.nccl/discouraged-value"},
                                         {"CUDA_LAUNCH_BLOCKING", "1", "env.nccl/discouraged-value"},
                                         {"NCCL_ALGO", "Ring", "env.nccl/debug-setting"},
                                         {"NCCL_PROTO", "^LL128", "env.nccl/debug-setting"},
                                         {"CUDA_INJECTION64_PATH", "/opt/tool.so", "env.nccl/dcgm-listed"}}) {
    const Verdict v = run_env_nccl({{c.name, c.value}});
    EXPECT_EQ(v.status, Status::Warn) << c.name;
    ASSERT_FALSE(v.findings.empty()) << c.name;
    EXPECT_EQ(v.findings.front().code, c.code) << v.summary;
    EXPECT_EQ(v.findings.front().params["unset"], "unset " + c.name);
    EXPECT_TRUE(has(v.summary, c.name)) << v.summary;
    EXPECT_TRUE(has(v.remedy, "unset " + c.name)) << v.remedy;
  }
  const Verdict dcgm = run_env_nccl({{"CUDA_INJECTION64_PATH", "/opt/tool.so"}});
  EXPECT_EQ(dcgm.finding.code, "env.nccl/dcgm-listed");
  EXPECT_EQ(dcgm.finding.params["name"], "CUDA_INJECTION64_PATH");
  EXPECT_EQ(dcgm.finding.params["source"], "environment");
  const Verdict algo = run_env_nccl({{"NCCL_ALGO", "Ring"}});
  EXPECT_EQ(algo.finding.code, "env.nccl/debug-setting");
  EXPECT_EQ(algo.finding.params["setting"], "NCCL_ALGO=Ring (environment)");
}

TEST(EnvNccl, LegacyTorchNamesWarnNamingTheNewName) {
  const Verdict v = run_env_nccl({{"NCCL_ASYNC_ERROR_HANDLING", "0"}});
  EXPECT_EQ(v.status, Status::Warn);
  ASSERT_EQ(v.findings.size(), 2u) << v.summary;
  EXPECT_EQ(v.findings[0].code, "env.nccl/legacy-name");
  EXPECT_EQ(v.findings[0].params["current"], "TORCH_NCCL_ASYNC_ERROR_HANDLING");
  EXPECT_EQ(v.findings[1].code, "env.nccl/discouraged-value");  // the new name's rules
  EXPECT_TRUE(has(v.summary, "deprecated PyTorch name of TORCH_NCCL_ASYNC_ERROR_HANDLING")) << v.summary;
  EXPECT_TRUE(has(v.summary, "hangs the job")) << v.summary;  // the new name's rules apply to the alias
  EXPECT_TRUE(has(v.remedy, "unset NCCL_ASYNC_ERROR_HANDLING; export TORCH_NCCL_ASYNC_ERROR_HANDLING=0")) << v.remedy;
  EXPECT_FALSE(v.remedy.ends_with(";")) << v.remedy;
  const Verdict both = run_env_nccl({{"NCCL_BLOCKING_WAIT", "1"}, {"TORCH_NCCL_BLOCKING_WAIT", "0"}});
  const Finding* differs = coded(both, "env.nccl/legacy-name-differs");
  ASSERT_NE(differs, nullptr) << both.summary;
  EXPECT_EQ(differs->params["name"], "NCCL_BLOCKING_WAIT");
  EXPECT_EQ(differs->params["current"], "TORCH_NCCL_BLOCKING_WAIT");
  EXPECT_EQ(differs->params["current_setting"], "TORCH_NCCL_BLOCKING_WAIT=0 (environment)");
  EXPECT_TRUE(has(both.summary, "both set and differ")) << both.summary;
}

// Which of torch's names is read is the job's torch's release: before 2.2.0 only NCCL_ASYNC_ERROR_HANDLING
// and its kin; TORCH_NCCL_* then has no effect, and the legacy name is no deprecation.
TEST(EnvNccl, TorchBefore22ReadsOnlyTheLegacyNames) {
  const auto with_torch = [](std::map<std::string, std::string> env, const std::string& version) {
    RankFacts f = with_env(std::move(env));
    FrameworkBuild torch;
    torch.name = "torch";
    torch.version = version;
    torch.cuda = "12.1";
    torch.build = "cuda";
    f.gpu.runtime.frameworks = {torch};
    return judge(f);
  };
  const Verdict old_torch = with_torch({{"TORCH_NCCL_BLOCKING_WAIT", "1"}}, "2.1.2+cu121");
  EXPECT_EQ(old_torch.status, Status::Warn);
  EXPECT_EQ(old_torch.finding.code, "env.nccl/torch-reads-legacy");
  EXPECT_EQ(old_torch.summary,
            "TORCH_NCCL_BLOCKING_WAIT=1 (environment) has no effect: torch 2.1.2+cu121 reads NCCL_BLOCKING_WAIT (this "
            "name is read from torch 2.2 on)");
  EXPECT_TRUE(has(old_torch.remedy, "export NCCL_BLOCKING_WAIT=1")) << old_torch.remedy;
  // The legacy name with that torch: its value judged, no deprecation.
  const Verdict legacy = with_torch({{"NCCL_ASYNC_ERROR_HANDLING", "0"}}, "2.1.2");
  EXPECT_EQ(coded(legacy, "env.nccl/legacy-name"), nullptr) << legacy.summary;
  EXPECT_NE(coded(legacy, "env.nccl/discouraged-value"), nullptr) << legacy.summary;
  // From 2.2.0 the TORCH_NCCL_* name is the one; a torch not found judges by the catalog's (newest) names.
  EXPECT_EQ(with_torch({{"TORCH_NCCL_BLOCKING_WAIT", "1"}}, "2.2.0").status, Status::Pass);
  EXPECT_EQ(run_env_nccl({{"TORCH_NCCL_BLOCKING_WAIT", "1"}}).status, Status::Pass);
  EXPECT_EQ(with_torch({{"NCCL_BLOCKING_WAIT", "1"}}, "2.5.1+cu124").finding.code, "env.nccl/legacy-name");
}

TEST(EnvNccl, UnknownNamesWarn) {
  const Verdict typo = run_env_nccl({{"NCCL_SOCKET_IFNAM", "eth0"}});
  EXPECT_EQ(typo.status, Status::Warn);
  EXPECT_EQ(typo.finding.code, "env.nccl/unknown-nccl-name");
  EXPECT_EQ(typo.finding.params["setting"], "NCCL_SOCKET_IFNAM=eth0 (environment)");
  EXPECT_EQ(typo.finding.params["close"], "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(typo.finding.params["rename"], "unset NCCL_SOCKET_IFNAM; export NCCL_SOCKET_IFNAME=eth0");
  EXPECT_TRUE(has(typo.summary, "did you mean NCCL_SOCKET_IFNAME?")) << typo.summary;
  EXPECT_EQ(typo.remedy, "unset NCCL_SOCKET_IFNAM; export NCCL_SOCKET_IFNAME=eth0");
  const Verdict timeout = run_env_nccl({{"NCCL_TIMEOUT", "1800"}});
  EXPECT_EQ(timeout.status, Status::Warn);
  EXPECT_EQ(timeout.finding.code, "env.nccl/no-effect");
  EXPECT_EQ(timeout.finding.params["setting"], "NCCL_TIMEOUT=1800 (environment)");
  EXPECT_FALSE(timeout.finding.params.contains("read_from"));  // no release reads it
  EXPECT_TRUE(has(timeout.summary, "NCCL_TIMEOUT=1800 (environment) has no effect: NCCL has no such variable"))
      << timeout.summary;
  EXPECT_EQ(timeout.remedy, "unset NCCL_TIMEOUT");
  const Verdict torch_new = run_env_nccl({{"TORCH_NCCL_SOME_NEW_KNOB", "1"}, {"CUDA_SOMETHING", "x"}});
  EXPECT_EQ(torch_new.status, Status::Pass) << torch_new.summary;  // no near miss: not a typo
  const Verdict torch_typo = run_env_nccl({{"TORCH_NCCL_BLOCKING_WAlT", "1"}});
  EXPECT_EQ(torch_typo.status, Status::Warn);
  EXPECT_EQ(torch_typo.finding.code, "env.nccl/unknown-torch-name");
  EXPECT_EQ(torch_typo.finding.params["close"], "TORCH_NCCL_BLOCKING_WAIT");
  EXPECT_TRUE(has(torch_typo.summary, "TORCH_NCCL_BLOCKING_WAIT")) << torch_typo.summary;
}

TEST(EnvNccl, EnumCaseAndLegacyLevels) {
  const Verdict lower = run_env_nccl({{"NCCL_P2P_LEVEL", "nvl"}});
  EXPECT_EQ(lower.status, Status::Warn);
  EXPECT_EQ(lower.finding.code, "env.nccl/misread-value");
  EXPECT_EQ(lower.remedy, "export NCCL_P2P_LEVEL=NVL");
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
      conf_file("/etc/nccl.conf", "system",
                {{"NCCL_P2P_DISABLE", "1", 1}, {"NCCL_DEBUG", "INFO", 2}, {"NCCL_SHM_DISABLE", "1", 3}}),
  };
  const Verdict v = run_env_nccl({}, files);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "env.nccl/invalid-value");
  EXPECT_EQ(v.finding.params["setting"], "NCCL_P2P_DISABLE=true (/home/u/.nccl.conf:2)");
  EXPECT_EQ(v.finding.params["set"], "Write NCCL_P2P_DISABLE=1 on line 2 of /home/u/.nccl.conf.");
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
  const Finding* malformed = coded(v, "env.nccl/conf-malformed-lines");
  ASSERT_NE(malformed, nullptr) << v.summary;
  EXPECT_EQ(malformed->params["path"], "/etc/nccl.conf");
  EXPECT_EQ(malformed->params["lines"], "7");
  const Finding* spaced = coded(v, "env.nccl/conf-spaced-name");
  ASSERT_NE(spaced, nullptr) << v.summary;
  EXPECT_EQ(spaced->params["line"], 4);
  EXPECT_EQ(spaced->params["entry"], "NCCL_IB_TIMEOUT ");
  EXPECT_EQ(spaced->params["bare"], "NCCL_IB_TIMEOUT");
  EXPECT_EQ(spaced->params["value"], "22");
  EXPECT_TRUE(has(v.summary, "/etc/nccl.conf:4 sets 'NCCL_IB_TIMEOUT '")) << v.summary;
  EXPECT_TRUE(has(v.summary, "line(s) 7")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "Write NCCL_IB_TIMEOUT=22 without spaces on line 4 of /etc/nccl.conf.")) << v.remedy;
}

TEST(EnvNccl, ConfFileReadProblems) {
  const Verdict absent =
      run_env_nccl({}, {missing_file("/root/.nccl.conf", "user", ProbeErrc::NotFound, "does not exist"),
                        missing_file("/etc/nccl.conf", "system", ProbeErrc::NotFound, "does not exist")});
  EXPECT_EQ(absent.status, Status::Pass) << absent.summary;
  EXPECT_EQ(absent.evidence.at("conf_files").size(), 2u);

  const Verdict named =
      run_env_nccl({{"NCCL_CONF_FILE", "/nope.conf"}},
                   {missing_file("/nope.conf", "NCCL_CONF_FILE", ProbeErrc::NotFound, "does not exist")});
  EXPECT_EQ(named.status, Status::Warn);
  EXPECT_EQ(named.finding.code, "env.nccl/conf-file-missing");
  EXPECT_EQ(named.finding.params["path"], "/nope.conf");
  EXPECT_TRUE(has(named.summary, "NCCL_CONF_FILE=/nope.conf does not exist")) << named.summary;

  const Verdict denied =
      run_env_nccl({}, {missing_file("/etc/nccl.conf", "system", ProbeErrc::PermissionDenied, "permission denied")});
  EXPECT_EQ(denied.status, Status::Warn);
  EXPECT_EQ(denied.finding.code, "env.nccl/conf-file-denied");
  EXPECT_EQ(denied.finding.params["path"], "/etc/nccl.conf");
  EXPECT_EQ(denied.remedy, "chmod a+r /etc/nccl.conf (or remove it if its settings are not wanted).");

  const Verdict broken =
      run_env_nccl({}, {missing_file("/etc/nccl.conf", "system", ProbeErrc::Unreadable, "Is a directory")});
  EXPECT_EQ(broken.status, Status::Unknown);
  EXPECT_EQ(broken.finding.code, "env.nccl/conf-file-unread");
  EXPECT_EQ(broken.finding.params["path"], "/etc/nccl.conf");
  EXPECT_EQ(broken.finding.params["detail"], "Is a directory");
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

TEST(EnvNcclReaders, TorchIntegersHaveNoInventedRangesAndUnitsAreConverted) {
  EXPECT_EQ(run_env_nccl({{"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "5400"}}).status, Status::Pass);
  const Verdict m = run_env_nccl({{"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "10m"}});
  EXPECT_EQ(m.status, Status::Warn);
  EXPECT_TRUE(has(m.summary, "reads it as 10 (10m is 600 seconds)")) << m.summary;
  EXPECT_EQ(m.remedy, "export TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=600");
  const Verdict b = run_env_nccl({{"NCCL_BUFFSIZE", "8M"}});
  EXPECT_EQ(b.status, Status::Warn);
  EXPECT_EQ(b.remedy, "export NCCL_BUFFSIZE=8388608");
  const Verdict w = run_env_nccl({{"NCCL_IB_GID_INDEX", "three"}});
  EXPECT_EQ(w.status, Status::Warn);
  EXPECT_EQ(w.finding.code, "env.nccl/misread-value");
  EXPECT_EQ(w.finding.params["set"],
            "Set NCCL_IB_GID_INDEX to a decimal integer in the job's environment, or remove it.");
  EXPECT_EQ(w.remedy, "Set NCCL_IB_GID_INDEX to a decimal integer in the job's environment, or remove it.");
  const Verdict d = run_env_nccl({{"TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", "5s"}});
  EXPECT_EQ(d.remedy, "export TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC=5000");
  // The remedy never proposes a value the same check warns about.
  const Verdict async = run_env_nccl({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0s"}});
  EXPECT_FALSE(has(async.remedy, "=0")) << async.remedy;
  const Verdict c = run_env_nccl({{"CUDA_DEVICE_MAX_CONNECTIONS", "lots"}});
  EXPECT_EQ(c.status, Status::Warn);
  EXPECT_FALSE(has(c.summary, "strtoll")) << c.summary;
  EXPECT_TRUE(has(c.summary, "CUDA expects")) << c.summary;
}

TEST(EnvNcclReaders, RangesTheReadersApply) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{{"NCCL_IB_SL", "16"},
                                                                                    {"NCCL_IB_TC", "256"},
                                                                                    {"NCCL_CROSS_NIC", "3"},
                                                                                    {"NCCL_NTHREADS", "100"},
                                                                                    {"NCCL_NTHREADS", "1024"},
                                                                                    {"NCCL_LL128_NTHREADS", "96"},
                                                                                    {"NCCL_BUFFSIZE", "0"},
                                                                                    {"NCCL_CGA_CLUSTER_SIZE", "16"},
                                                                                    {"NCCL_MIN_CTAS", "0"},
                                                                                    {"NCCL_COMM_BLOCKING", "2"}}) {
    const Verdict v = run_env_nccl({{name, value}});
    EXPECT_EQ(v.status, Status::Warn) << name << "=" << value << ": " << v.summary;
  }
  EXPECT_EQ(run_env_nccl({{"NCCL_BUFFSIZE", "-1"}}).status, Status::Warn);
  for (const auto& [name, value] : std::map<std::string, std::string>{{"NCCL_IB_SL", "15"},
                                                                      {"NCCL_IB_TC", "106"},
                                                                      {"NCCL_CROSS_NIC", "0"},
                                                                      {"NCCL_NTHREADS", "256"},
                                                                      {"NCCL_LL128_NTHREADS", "640"},
                                                                      {"NCCL_COMM_ID", "10.1.2.3:29500"},
                                                                      {"NCCL_P2P_DISABLE", "2"}}) {
    const Verdict v = run_env_nccl({{name, value}});
    EXPECT_EQ(v.status, Status::Pass) << name << "=" << value << ": " << v.summary;
  }
  const Verdict id = run_env_nccl({{"NCCL_COMM_ID", "10.1.2.3"}});
  EXPECT_EQ(id.status, Status::Fail);
  EXPECT_EQ(id.finding.code, "env.nccl/invalid-value");
  EXPECT_TRUE(has(id.remedy, "<host>:<port>")) << id.remedy;
  const Verdict t = run_env_nccl({{"NCCL_NTHREADS", "100"}});
  EXPECT_TRUE(has(t.summary, "tuning.cc")) << t.summary;  // the range's source is named
}

TEST(EnvNcclReaders, DebugInfoIsANoteNotAWarning) {
  const Verdict v = run_env_nccl({{"NCCL_DEBUG", "INFO"}});
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL_DEBUG=INFO")) << v.summary;
  EXPECT_EQ(v.evidence.at("notes").size(), 1u);
  EXPECT_EQ(run_env_nccl({{"NCCL_DEBUG", "trace"}}).status, Status::Pass);
}

TEST(EnvNcclReaders, CombinedRemediesAreOneCommandLine) {
  const Verdict v = run_env_nccl({{"NCCL_P2P_DISABLE", "true"}, {"NCCL_TIMEOUT", "5"}});
  EXPECT_EQ(v.remedy, "export NCCL_P2P_DISABLE=1; unset NCCL_TIMEOUT");
  // The command line is the remedy of the first finding the report prints; the other keeps its own.
  ASSERT_EQ(v.findings.size(), 2u) << v.summary;
  EXPECT_EQ(v.findings[0].code, "env.nccl/invalid-value");
  EXPECT_EQ(v.findings[0].params["set"], "export NCCL_P2P_DISABLE=1; unset NCCL_TIMEOUT");
  EXPECT_EQ(v.findings[1].code, "env.nccl/no-effect");
  EXPECT_EQ(v.findings[1].params["unset"], "unset NCCL_TIMEOUT");
}

TEST(EnvNcclReaders, NamesComeFromTheLoadedLibrary) {
  // A variable of a newer NCCL that the catalog has never heard of: the library reads it.
  Verdict v = judge(with_library({{"NCCL_BRAND_NEW_KNOB", "1"}}, {"NCCL_BRAND_NEW_KNOB", "NCCL_DEBUG"}));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.evidence.at("nccl_names").at("from"), "library");
  // A catalog name this library does not read.
  v = judge(with_library({{"NCCL_IB_SL", "3"}}, {"NCCL_DEBUG"}, "2.17.1"));
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "env.nccl/other-release-name");
  EXPECT_EQ(v.finding.params["library"], "NCCL 2.17.1 (/usr/lib/libnccl.so.2)");
  EXPECT_TRUE(has(v.summary, " (the catalog's NCCL 2.28.9 reads it)")) << v.summary;
  EXPECT_FALSE(v.finding.params.contains("variable_note"));
  EXPECT_EQ(v.remedy, "unset NCCL_IB_SL (or load an NCCL release that reads it)");
  EXPECT_TRUE(has(v.summary, "is not read by NCCL 2.17.1 (/usr/lib/libnccl.so.2)")) << v.summary;
  // A removed name, with the releases that read it.
  v = judge(with_library({{"NCCL_LL_THRESHOLD", "0"}}, {"NCCL_DEBUG"}));
  EXPECT_EQ(v.finding.code, "env.nccl/other-release-name");
  EXPECT_EQ(v.finding.params["read_from"], "");
  EXPECT_EQ(v.finding.params["read_to"], "2.4");
  EXPECT_EQ(v.finding.params["variable_note"], "removed in NCCL 2.5; use NCCL_PROTO only for debugging");
  EXPECT_TRUE(has(v.summary, ": removed in NCCL 2.5; use NCCL_PROTO only for debugging")) << v.summary;
  EXPECT_EQ(v.remedy, "unset NCCL_LL_THRESHOLD");
  EXPECT_TRUE(has(v.summary, "NCCL <= 2.4 read it")) << v.summary;
  // A name only newer releases read, judged against an older library.
  v = judge(with_library({{"NCCL_NO_CACHE", "ALL"}}, {"NCCL_DEBUG"}, "2.28.9"));
  EXPECT_EQ(v.finding.code, "env.nccl/other-release-name");
  EXPECT_EQ(v.finding.params["read_from"], "2.29");
  EXPECT_TRUE(has(v.summary, "NCCL >= 2.29 reads it")) << v.summary;
  // A removed name that this (old) library still reads is not "no effect".
  v = judge(with_library({{"NCCL_LL_THRESHOLD", "0"}}, {"NCCL_LL_THRESHOLD"}, "2.4.8"));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  // A typo is named against the library's own names.
  v = judge(with_library({{"NCCL_BRAND_NEW_KNOP", "1"}}, {"NCCL_BRAND_NEW_KNOB"}));
  EXPECT_EQ(v.finding.code, "env.nccl/not-in-library");
  EXPECT_EQ(v.finding.params["library"], "NCCL 2.30.7 (/usr/lib/libnccl.so.2)");
  EXPECT_EQ(v.finding.params["close"], "NCCL_BRAND_NEW_KNOB");
  EXPECT_EQ(v.finding.params["rename"], "unset NCCL_BRAND_NEW_KNOP; export NCCL_BRAND_NEW_KNOB=1");
  EXPECT_TRUE(has(v.summary, "did you mean NCCL_BRAND_NEW_KNOB?")) << v.summary;
  // A plugin's names count as read.
  RankFacts f = with_library({{"NCCL_PLUGIN_KNOB", "1"}}, {"NCCL_DEBUG"});
  f.nccl_conf.names.plugins.push_back(
      NcclPlugin{"net", "", "", "/usr/lib/libnccl-net.so", {"libnccl-net.so"}, {"NCCL_PLUGIN_KNOB"}});
  EXPECT_EQ(judge(f).status, Status::Pass) << judge(f).summary;
}

TEST(EnvNcclReaders, WithoutALibraryTheCatalogStandsInAndSaysSo) {
  RankFacts f = with_env({{"NCCL_ALLGATHERV_ENABLE", "1"}, {"NCCL_NOT_A_THING", "1"}});
  f.nccl_conf.names.names = Probed<std::vector<std::string>>::error(ProbeErrc::NotFound, "no libnccl.so.2 found");
  const Verdict v = judge(f);
  EXPECT_EQ(v.evidence.at("nccl_names").at("from"), "catalog");
  EXPECT_TRUE(has(v.evidence.at("nccl_names").at("why").get<std::string>(), "no libnccl.so.2 found"));
  EXPECT_EQ(variable(v, "NCCL_ALLGATHERV_ENABLE")->at("status"), "PASS");  // a 2.29 name in the catalog
  EXPECT_EQ(variable(v, "NCCL_NOT_A_THING")->at("status"), "WARN");
  EXPECT_EQ(v.finding.code, "env.nccl/unknown-nccl-name");
  EXPECT_EQ(v.finding.params["setting"], "NCCL_NOT_A_THING=1 (environment)");
  EXPECT_TRUE(has(v.summary, "judged by the catalog of NCCL 2.28.9")) << v.summary;
}

TEST(EnvNcclReaders, ThousandsOfUnknownNamesAreCountedNotListed) {
  std::map<std::string, std::string> env;
  for (int i = 0; i < 10000; ++i) env["NCCL_X" + std::to_string(100000 + i)] = "1";
  RankFacts f = with_env(env);
  f.nccl_conf.names.names = Probed<std::vector<std::string>>::error(ProbeErrc::NotFound, "no libnccl.so.2 found");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary.substr(0, 300);
  ASSERT_EQ(v.findings.size(), 17u);  // 16 named, one that counts the rest
  EXPECT_EQ(v.findings.back().code, "env.nccl/more-unknown-names");
  EXPECT_EQ(v.findings.back().params["count"], 9984);
  EXPECT_TRUE(has(v.summary, "and 9984 more variables that nothing of the job reads (NCCL_X100016, ")) << v.summary;
  EXPECT_LT(v.summary.size(), 8000u);
  EXPECT_LT(v.remedy.size(), 2000u);
  EXPECT_EQ(v.evidence.at("variables").size(), 10000u);  // every name kept for --format json
}

RankFacts with_rdma(std::map<std::string, std::string> env, bool devices) {
  RankFacts f = with_env(std::move(env));
  std::vector<IbDevice> ib;
  if (devices) ib.push_back(IbDevice{"mlx5_0", "0000:17:00.0", {}});
  f.net.ib_devices = Probed<std::vector<IbDevice>>::ok(std::move(ib), "/sys/class/infiniband");
  return f;
}

TEST(EnvNcclReaders, NetworksThatDoNotExistHereFailInit) {
  Verdict v = judge(with_rdma({{"NCCL_NET", "IB"}}, false));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "env.nccl/net-ib-without-rdma");
  EXPECT_EQ(v.finding.params["setting"], "NCCL_NET=IB (environment)");
  EXPECT_TRUE(has(v.summary, "no RDMA device")) << v.summary;
  EXPECT_EQ(judge(with_rdma({{"NCCL_NET", "IB"}}, true)).status, Status::Pass);
  EXPECT_EQ(judge(with_rdma({{"NCCL_NET", "socket"}}, false)).status, Status::Pass);
  v = judge(with_rdma({{"NCCL_NET", "Sockets"}}, true));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "env.nccl/net-unknown");
  EXPECT_EQ(v.finding.params["close"], "Socket");
  EXPECT_EQ(v.finding.params["net"], "Sockets");
  EXPECT_TRUE(has(v.summary, "did you mean Socket?: NCCL init fails (\"Failed to initialize any NET plugin\")"))
      << v.summary;
  v = judge(with_rdma({{"NCCL_NET", "IB"}, {"NCCL_IB_DISABLE", "1"}}, true));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "env.nccl/net-ib-disabled");
  EXPECT_EQ(v.finding.params["unset"], "unset NCCL_IB_DISABLE");
  EXPECT_EQ(v.remedy, "unset NCCL_IB_DISABLE");
  v = judge(with_rdma({{"NCCL_IB_HCA", "mlx5_0"}}, false));
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "env.nccl/ib-hca-without-rdma");
  EXPECT_EQ(v.finding.params["setting"], "NCCL_IB_HCA=mlx5_0 (environment)");
  EXPECT_EQ(judge(with_rdma({{"NCCL_IB_HCA", "mlx5_0"}}, true)).status, Status::Pass);
}

TEST(EnvNcclReaders, FilesThatDoNotExist) {
  RankFacts f = with_env({{"NCCL_NET_PLUGIN", "aws-ofi"}, {"NCCL_TOPO_FILE", "/etc/topo.xml"}});
  f.nccl_conf.names.plugins.push_back(
      NcclPlugin{"net", "aws-ofi", "NCCL_NET_PLUGIN", "", {"aws-ofi", "libnccl-net-aws-ofi.so"}, {}});
  f.nccl_conf.named_files.push_back(NcclNamedFile{"NCCL_TOPO_FILE", "/etc/topo.xml", "not_found"});
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  const Finding* plugin = coded(v, "env.nccl/plugin-missing");
  ASSERT_NE(plugin, nullptr) << v.summary;
  EXPECT_EQ(plugin->params["kind"], "net");
  EXPECT_EQ(plugin->params["tried"], "aws-ofi or libnccl-net-aws-ofi.so");
  EXPECT_EQ(plugin->params["variable"], "NCCL_NET_PLUGIN");
  const Finding* topo = coded(v, "env.nccl/topo-file-unreadable");
  ASSERT_NE(topo, nullptr) << v.summary;
  EXPECT_EQ(topo->params["path"], "/etc/topo.xml");
  EXPECT_EQ(topo->params["why"], "does not exist");
  EXPECT_EQ(topo->params["variable"], "NCCL_TOPO_FILE");
  EXPECT_TRUE(has(v.summary, "no aws-ofi or libnccl-net-aws-ofi.so")) << v.summary;
  EXPECT_TRUE(has(v.summary, "/etc/topo.xml does not exist")) << v.summary;
  // The net plugin is missing and NCCL_NET names its network: no network matches.
  f.env = EnvSnapshot({{"NCCL_NET_PLUGIN", "aws-ofi"}, {"NCCL_NET", "AWS Libfabric"}});
  v = judge(f);
  EXPECT_EQ(v.status, Status::Fail);
  const Finding* net = coded(v, "env.nccl/net-unknown");
  ASSERT_NE(net, nullptr) << v.summary;
  EXPECT_EQ(net->params["net"], "AWS Libfabric");
  EXPECT_FALSE(net->params.contains("close"));
  RankFacts g = with_env({{"NCCL_GRAPH_FILE", "graph.xml"}});
  g.nccl_conf.named_files.push_back(NcclNamedFile{"NCCL_GRAPH_FILE", "/work/graph.xml", "not_found"});
  v = judge(g);
  EXPECT_EQ(v.status, Status::Fail);
  const Finding* graph = coded(v, "env.nccl/graph-file-unreadable");
  ASSERT_NE(graph, nullptr) << v.summary;
  EXPECT_EQ(graph->params["path"], "/work/graph.xml");
  EXPECT_EQ(graph->params["why"], "does not exist");
  EXPECT_TRUE(has(v.summary, "Could not open XML graph file")) << v.summary;
}

TEST(EnvNcclReaders, AllocatorSettingsReadWithTorchsGrammar) {
  for (const char* bad : {"garbage", "expandable_segments:Ture", "max_split_size_mb:abc", "max_split_size_mb:10",
                          "garbage_collection_threshold:1.5", "backend:cudaMalloc", "expandable_segments",
                          "expandable_segments:True;max_split_size_mb:128", "roundup_power2_divisions:3"}) {
    const Verdict v = run_env_nccl({{"PYTORCH_CUDA_ALLOC_CONF", bad}});
    EXPECT_EQ(v.status, Status::Fail) << bad << ": " << v.summary;
    EXPECT_TRUE(has(v.summary, "torch raises")) << v.summary;
  }
  const Verdict ture = run_env_nccl({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:Ture"}});
  EXPECT_EQ(ture.finding.code, "env.nccl/alloc-conf-rejected");
  EXPECT_EQ(ture.finding.params["setting"], "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:Ture (environment)");
  EXPECT_EQ(ture.finding.params["set"], "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  EXPECT_EQ(ture.remedy, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  const Verdict typo = run_env_nccl({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segment:True"}});
  EXPECT_TRUE(has(typo.summary, "did you mean expandable_segments?")) << typo.summary;
  for (const char* good : {"expandable_segments:True", "max_split_size_mb:512,garbage_collection_threshold:0.6",
                           "backend:cudaMallocAsync", "roundup_power2_divisions:[256:1,512:2,>:4]", ""}) {
    const Verdict v = run_env_nccl({{"PYTORCH_CUDA_ALLOC_CONF", good}});
    EXPECT_EQ(v.status, Status::Pass) << good << ": " << v.summary;
  }
  EXPECT_EQ(run_env_nccl({{"PYTORCH_HIP_ALLOC_CONF", "garbage"}}).status, Status::Fail);
  const Verdict trailing = run_env_nccl({{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:512abc"}});
  EXPECT_EQ(trailing.status, Status::Warn);
  EXPECT_EQ(trailing.finding.code, "env.nccl/alloc-conf-misread");
  EXPECT_EQ(trailing.finding.params["problem"], "max_split_size_mb:512abc is read as 512 (the rest is ignored)");
  EXPECT_EQ(trailing.remedy,
            "Write PYTORCH_CUDA_ALLOC_CONF as key:value pairs separated by ',' (expandable_segments:True,"
            "max_split_size_mb:512) in the job's environment, or remove it.");
  const Verdict name = run_env_nccl({{"PYTORCH_CUDA_ALLOC_CONFIG", "expandable_segments:True"}});
  EXPECT_EQ(name.status, Status::Warn);
  EXPECT_EQ(name.finding.code, "env.nccl/unknown-torch-name");
  EXPECT_EQ(name.finding.params["close"], "PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_TRUE(has(name.summary, "did you mean PYTORCH_CUDA_ALLOC_CONF?")) << name.summary;
  EXPECT_EQ(run_env_nccl({{"PYTORCH_SOMETHING_ELSE", "1"}}).status, Status::Pass);
  // With the right name set too, the typo is only unset: its value must not overwrite the right one.
  const Verdict both =
      run_env_nccl({{"PYTORCH_CUDA_ALLOC_CONFIG", "x"}, {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}});
  EXPECT_EQ(both.remedy, "unset PYTORCH_CUDA_ALLOC_CONFIG");
  EXPECT_EQ(both.finding.code, "env.nccl/unknown-torch-name");
  EXPECT_EQ(both.finding.params["close"], "PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_TRUE(has(both.summary, "; did you mean PYTORCH_CUDA_ALLOC_CONF? (which is set too)")) << both.summary;
}

TEST(EnvNcclReaders, TheLoadedNcclsGrammarJudgesNcclAlgo) {
  RankFacts f = with_env({{"NCCL_ALGO", "allreduce:ring;bogus:tree"}});
  NcclLibrary lib;
  lib.version = "2.28.9";
  f.gpu.nccl = Probed<NcclLibrary>::ok(lib, "ncclGetVersion");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.28.9 refuses it (ncclInvalidUsage")) << v.summary;
  lib.version = "2.21.5";
  f.gpu.nccl = Probed<NcclLibrary>::ok(lib, "ncclGetVersion");
  RankFacts old = with_env({{"NCCL_ALGO", "Ring,Foo"}});
  old.gpu.nccl = f.gpu.nccl;
  const Verdict skipped = judge(old);
  EXPECT_EQ(skipped.status, Status::Warn) << skipped.summary;
  EXPECT_TRUE(has(skipped.summary, "NCCL 2.21.5 skips the unknown name 'Foo'")) << skipped.summary;
}

TEST(EnvNcclReaders, AMitigationOfTheLoadedReleaseIsNotADebuggingLeftover) {
  RankFacts f = with_env({{"NCCL_PROTO", "^LL128"}});
  NcclLibrary lib;
  lib.version = "2.18.1";
  f.gpu.nccl = Probed<NcclLibrary>::ok(lib, "ncclGetVersion");
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "mitigates known problem nccl-2.18.1-h100-ll128")) << v.summary;
  EXPECT_FALSE(has(v.remedy, "unset NCCL_PROTO")) << v.remedy;
  NvmlGpu a100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok({a100}, "NVML");
  EXPECT_EQ(judge(f).status, Status::Warn);  // the problem is an H100 one: on A100s nothing is mitigated
  EXPECT_EQ(judge(f).finding.code, "env.nccl/debug-setting");
  a100.name = "NVIDIA H100 80GB HBM3";
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok({a100}, "NVML");
  EXPECT_EQ(judge(f).status, Status::Pass);
  lib.version = "2.28.9";  // no such problem: the setting is a debugging leftover again
  f.gpu.nccl = Probed<NcclLibrary>::ok(lib, "ncclGetVersion");
  EXPECT_EQ(judge(f).status, Status::Warn);
}

}  // namespace
}  // namespace checks_env_nccl_test
}  // namespace preflight
