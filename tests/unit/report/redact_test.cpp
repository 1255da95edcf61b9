// SPDX-License-Identifier: MIT
// One redaction rule for every output: a rank whose environment holds secrets (tokens, passwords,
// keys, Open MPI's transport key, a user:password in MASTER_ADDR, NCCL_COMM_ID and
// TORCH_DISTRIBUTED_INIT) judged by every check, then rendered as text, JSON (the --json report,
// a --json-per-rank file), JUnit and Prometheus, and recorded as a capture's environment: no
// secret's value in any of them, the marker where one was, and the values of the variables that
// are no secret kept. The catalog of variables the job's libraries read holds no secret name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checks/env_catalog.hpp"
#include "job/job_report.hpp"
#include "report/report.hpp"
#include "sys/capture.hpp"

namespace preflight {
namespace report_redact_test {
namespace {

struct Planted {
  const char* name;
  const char* value;  // what no output may show
};

// Variables whose values are secrets, with values no output may contain.
const Planted kSecrets[] = {
    {"NCCL_API_TOKEN", "nccl-api-t0ken-7f3a9c"},
    {"NCCL_PASSWORD", "nccl-pa55word-2b8d"},
    {"TORCH_SECRET_KEY", "torch-s3cret-k3y-91e0"},
    {"OMPI_MCA_orte_precondition_transports", "0123456789abcdef-fedcba9876543210"},
    {"SLURM_JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJhbGljZSJ9.c2lnbmF0dXJl"},
    {"HF_TOKEN", "hf_planted0123456789abcdefghijklmnop"},
    {"AWS_SECRET_ACCESS_KEY", "aws-wJalrXUtnFEMI-K7MDENG"},
    {"WANDB_API_KEY", "wandb-0f1e2d3c4b5a69788796a5b4"},
    {"NCCL_SHORT_TOKEN", "q7"},
};
// Passwords inside URLs of variables that are no secret.
const Planted kUrlPasswords[] = {
    {"MASTER_ADDR", "m4ster-pw-5e1f"},
    {"NCCL_COMM_ID", "c0mm-id-pw-8a2c"},
    {"TORCH_DISTRIBUTED_INIT", "t0rch-init-pw-3d4e"},
};
// Variables that are no secret: their values stay.
const Planted kPublic[] = {
    {"NCCL_IB_PKEY", "0x8001"},
    {"NCCL_SOCKET_IFNAME", "=eth7"},
    {"KRB5CCNAME", "FILE:/tmp/krb5cc_1000"},
    {"SSH_AUTH_SOCK", "/tmp/ssh-XXXX/agent.42"},
};

RankFacts planted_facts() {
  RankFacts f;
  f.identity.hostname = "node1";
  for (const Planted& s : kSecrets) f.env.set(s.name, s.value);
  for (const Planted& p : kPublic) f.env.set(p.name, p.value);
  f.env.set("MASTER_ADDR", std::string("http://admin:") + kUrlPasswords[0].value + "@node1");
  f.env.set("MASTER_PORT", "29500");
  f.env.set("NCCL_COMM_ID", std::string("user:") + kUrlPasswords[1].value + "@node1:29500");
  f.env.set("TORCH_DISTRIBUTED_INIT", std::string("tcp://user:") + kUrlPasswords[2].value + "@node1:23456");
  f.net.master.addr = *f.env.get("MASTER_ADDR");
  f.net.master.port = "29500";
  f.net.master.resolved =
      Probed<std::vector<std::string>>::error(ProbeErrc::NotFound, "Name or service not known", "getaddrinfo");
  return f;
}

Report planted_report() {
  const RankFacts f = planted_facts();
  const Options o;
  Report report =
      assemble_report(o, Profile::Node, single_rank_job(f), judge_rank(o, Profile::Node, f, true, nullptr), nullptr);
  // What a summary or a note may also say, as env.nccl and net.master do.
  report.notes.push_back(std::string("NCCL_PASSWORD=") + kSecrets[1].value + " was set");
  report.incidents.push_back("rendezvous " + *f.env.get("TORCH_DISTRIBUTED_INIT") + " did not answer");
  return report;
}

struct Output {
  std::string name;
  std::string text;
  bool shows_values;  // the format shows summaries or values (Prometheus shows neither)
};

std::vector<Output> every_output(const Report& report) {
  Options o;
  return {
      {"text", render_text(report, o, false), true},
      {"json", render_json(report, o), true},
      {"json per rank", render_json(report, o, JsonLayout::Compact), true},
      {"junit", render_junit(report, o), true},
      {"prometheus", render_prometheus(report, o), false},
      {"capture env", captured_env_json(report.ranks.front().env).dump(), true},
  };
}

TEST(EveryOutput, ShowsNoSecretValueAndTheMarkerInItsPlace) {
  const Report report = planted_report();
  // The report does show the planted names: the checks judged them.
  EXPECT_NE(render_text(report, Options{}, false).find("NCCL_API_TOKEN"), std::string::npos);
  for (const Output& out : every_output(report)) {
    for (const Planted& s : kSecrets) {
      if (std::string(s.value).size() >= 4) {
        EXPECT_EQ(out.text.find(s.value), std::string::npos) << out.name << ": " << s.name;
      }
    }
    for (const Planted& s : kUrlPasswords)
      EXPECT_EQ(out.text.find(s.value), std::string::npos) << out.name << ": " << s.name;
    EXPECT_EQ(out.text.find("admin:"), std::string::npos) << out.name;
    if (out.shows_values) {
      EXPECT_NE(out.text.find("redacted: "), std::string::npos) << out.name;
    }
  }
}

TEST(EveryOutput, ShortSecretsAreRedactedWhereShownAsTheirValue) {
  const std::string json = render_json(planted_report(), Options{});
  const nlohmann::json doc = nlohmann::json::parse(json);
  EXPECT_EQ(doc["ranks"][0]["facts"]["env"]["NCCL_SHORT_TOKEN"], "<redacted: 2 characters>");
  EXPECT_EQ(doc["ranks"][0]["facts"]["env"]["NCCL_PASSWORD"], redaction_marker(kSecrets[1].value));
  EXPECT_EQ(doc["ranks"][0]["facts"]["env"]["MASTER_ADDR"], "http://<redacted: 20 characters>@node1");
}

TEST(EveryOutput, KeepsTheValuesOfVariablesThatAreNoSecret) {
  const Report report = planted_report();
  const nlohmann::json doc = nlohmann::json::parse(render_json(report, Options{}));
  const nlohmann::json captured = captured_env_json(report.ranks.front().env);
  for (const Planted& p : kPublic) {
    EXPECT_EQ(doc["ranks"][0]["facts"]["env"][p.name], p.value) << p.name;
    EXPECT_EQ(captured["vars"][p.name], p.value) << p.name;
  }
  EXPECT_EQ(captured["vars"]["NCCL_COMM_ID"], "<redacted: 20 characters>@node1:29500");
  EXPECT_FALSE(captured["vars"].contains("NCCL_PASSWORD"));
  EXPECT_NE(std::find(captured["dropped_values"].begin(), captured["dropped_values"].end(), "NCCL_PASSWORD"),
            captured["dropped_values"].end());
}

TEST(EveryOutput, AMergedReportOfRedactedFilesRedactsNothingTwice) {
  // merge reads --json-per-rank files whose environments hold markers already: a marker is no secret.
  Report report = planted_report();
  report.ranks.front().env = report_redactor(report).env(report.ranks.front().env);
  const nlohmann::json doc = nlohmann::json::parse(render_json(report, Options{}));
  for (const Planted& s : kSecrets)
    EXPECT_EQ(doc["ranks"][0]["facts"]["env"][s.name], redaction_marker(s.value)) << s.name;
}

TEST(SecretNames, NoVariableTheJobsLibrariesReadIsASecret) {
  for (const EnvVarSpec& v : builtin_env_catalog().vars()) EXPECT_FALSE(is_secret_name(v.name)) << v.name;
}

}  // namespace
}  // namespace report_redact_test
}  // namespace preflight
