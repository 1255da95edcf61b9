// SPDX-License-Identifier: MIT
// The redaction rule of every output (core/redact.hpp): which names are secrets and which are not,
// URL userinfo with and without a scheme, secret NAME=value in text, the Redactor over known
// values (whole, inside words, cut off, escaped), JSON documents and environments; and the one
// passwd entry a capture keeps (core/env_grammar.hpp).
#include "core/redact.hpp"

#include <gtest/gtest.h>

#include "core/env_grammar.hpp"

namespace preflight {
namespace core_redact_test {
namespace {

TEST(SecretNames, TokensPasswordsKeysAndCredentialsAreSecretInAnyCase) {
  for (const char* name : {"HF_TOKEN",
                           "HUGGING_FACE_HUB_TOKEN",
                           "GITHUB_TOKEN",
                           "AWS_SESSION_TOKEN",
                           "AWS_SECRET_ACCESS_KEY",
                           "AWS_ACCESS_KEY_ID",
                           "WANDB_API_KEY",
                           "NGC_API_KEY",
                           "MLFLOW_TRACKING_PASSWORD",
                           "MLFLOW_TRACKING_TOKEN",
                           "NCCL_API_TOKEN",
                           "NCCL_PASSWORD",
                           "TORCH_SECRET_KEY",
                           "OMPI_MCA_orte_precondition_transports",
                           "OMPI_MCA_pmix_base_precondition_transports",
                           "SSH_PRIVATE_KEY",
                           "my_db_passwd",
                           "DB_PASS",
                           "MYSQL_PWD",
                           "GOOGLE_APPLICATION_CREDENTIALS",
                           "GIT_CREDS",
                           "SLURM_JWT",
                           "SESSION_COOKIE",
                           "NPM_CONFIG__AUTH",
                           "AZURE_STORAGE_CONNECTION_STRING",
                           "SENTRY_DSN",
                           "wandb_api_key",
                           "OPENAI_APIKEY",
                           "SSL_KEY_FILE",
                           "PREFLIGHT_API_KEY",
                           "GPG_PASSPHRASE",
                           "CI_JOB_TOKEN",
                           "SLACK_BOT_AUTH_TOKEN",
                           "DB_Password",
                           "KEY"}) {
    EXPECT_TRUE(is_secret_name(name)) << name;
  }
}

TEST(SecretNames, PartitionKeysSocketsCachesAndDirectoriesAreNot) {
  for (const char* name : {"NCCL_IB_PKEY",
                           "UCX_IB_PKEY",
                           "SSH_AUTH_SOCK",
                           "KRB5CCNAME",
                           "NCCL_SOCKET_IFNAME",
                           "TOKENIZERS_PARALLELISM",
                           "PWD",
                           "OLDPWD",
                           "MASTER_ADDR",
                           "MASTER_PORT",
                           "NCCL_COMM_ID",
                           "TORCH_DISTRIBUTED_INIT",
                           "XAUTHORITY",
                           "NCCL_PROXY_DUMP_SIGNAL",
                           "NCCL_IB_HCA",
                           "CUDA_VISIBLE_DEVICES",
                           "HF_HOME",
                           "PGPASSFILE",
                           "NCCL_DEBUG",
                           "NCCL_IB_QPS_PER_CONNECTION",
                           "KEYBOARD_LAYOUT",
                           "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                           ""}) {
    EXPECT_FALSE(is_secret_name(name)) << name;
  }
}

TEST(RedactionMarker, CountsCharactersNotBytes) {
  EXPECT_EQ(redaction_marker("s3cr3t-t0ken!"), "<redacted: 13 characters>");
  EXPECT_EQ(redaction_marker("x"), "<redacted: 1 character>");
  EXPECT_EQ(redaction_marker("café"), "<redacted: 4 characters>");
  EXPECT_TRUE(starts_with_redaction_marker("<redacted: 13 characters> tail"));
  EXPECT_TRUE(starts_with_redaction_marker("<redacted: 1 character>"));
  EXPECT_FALSE(starts_with_redaction_marker("<redacted: many characters>"));
  EXPECT_FALSE(starts_with_redaction_marker("redacted"));
}

struct Case {
  const char* in;
  const char* out;
};

TEST(Userinfo, TheUserAndPasswordOfAnyAuthorityAreRedacted) {
  const Case cases[] = {
      {"http://admin:pw@host", "http://<redacted: 8 characters>@host"},
      {"user:pw@host:29500", "<redacted: 7 characters>@host:29500"},
      {"NCCL_COMM_ID=user:pw@10.0.0.1:29500", "NCCL_COMM_ID=<redacted: 7 characters>@10.0.0.1:29500"},
      {"tcp://user:pass@host:23456", "tcp://<redacted: 9 characters>@host:23456"},
      {"getent hosts http://admin:pw@node1", "getent hosts http://<redacted: 8 characters>@node1"},
      {"--init=user:pw@node1", "--init=<redacted: 7 characters>@node1"},
      {"redis://:s3cret@cache:6379", "redis://<redacted: 7 characters>@cache:6379"},
      {"user:p@ss@host", "<redacted: 9 characters>@host"},
      {"x:y@[fe80::1]:29500", "<redacted: 3 characters>@[fe80::1]:29500"},
      {"MASTER_ADDR 'http://a:b@h' does not resolve",
       "MASTER_ADDR 'http://<redacted: 3 characters>@h' does not resolve"},
      {"a:b@h1 and c:d@h2", "<redacted: 3 characters>@h1 and <redacted: 3 characters>@h2"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(redact_userinfo(c.in), c.out) << c.in;
    EXPECT_EQ(redact_userinfo(redact_userinfo(c.in)), c.out) << "twice: " << c.in;
  }
}

TEST(Userinfo, AddressesPortsAndMailAddressesAreLeftAlone) {
  for (const char* text : {"host:29500", "[fe80::1]:29500", "fe80::1%eth0", "10.0.0.1:29500", "git@github.com",
                           "alice@example.com", "ssh://git@github.com/org/repo", "user:@host", "a:b@ host", "a:b@",
                           "rank 3@node1", "mlx5_0:1,mlx5_1:1", "=eth0", "<redacted: 8 characters>@host"}) {
    EXPECT_EQ(redact_userinfo(text), text);
  }
}

TEST(SecretAssignments, TheValueOfASecretNameIsRedactedInText) {
  const Case cases[] = {
      {"NCCL_PASSWORD=hunter2 is not a variable NCCL reads",
       "NCCL_PASSWORD=<redacted: 7 characters> is not a variable NCCL reads"},
      {"export TORCH_SECRET_KEY='a b'; unset X", "export TORCH_SECRET_KEY='<redacted: 3 characters>'; unset X"},
      {"unset NCCL_API_TOKEN; export NCCL_API_TOKEN=ab",
       "unset NCCL_API_TOKEN; export NCCL_API_TOKEN=<redacted: 2 characters>"},
      {"url?token=abcd&x=1", "url?token=<redacted: 8 characters>"},
      {"NCCL_IB_PKEY=0x8001 NCCL_SOCKET_IFNAME=eth0", "NCCL_IB_PKEY=0x8001 NCCL_SOCKET_IFNAME=eth0"},
      {"NCCL_PASSWORD=", "NCCL_PASSWORD="},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(redact_secret_assignments(c.in), c.out) << c.in;
    EXPECT_EQ(redact_secret_assignments(redact_secret_assignments(c.in)), c.out) << "twice: " << c.in;
  }
}

TEST(SecretLines, AConfigurationFileLosesTheValuesOfItsSecretLinesOnly) {
  EXPECT_EQ(redact_secret_lines("NCCL_PASSWORD=s3cret value\n"), "NCCL_PASSWORD=<redacted: 12 characters>\n");
  EXPECT_EQ(redact_secret_lines("  export MY_API_TOKEN =  abc123\r\nNCCL_IB_PKEY=0x8001\n"),
            "  export MY_API_TOKEN =  <redacted: 6 characters>\r\nNCCL_IB_PKEY=0x8001\n");
  EXPECT_EQ(redact_secret_lines("NCCL_COMM_ID=user:pw@10.0.0.1:29500"),
            "NCCL_COMM_ID=<redacted: 7 characters>@10.0.0.1:29500");
  EXPECT_EQ(redact_secret_lines("# NCCL_PASSWORD=in a comment\n"),
            "# NCCL_PASSWORD=<redacted: 2 characters> a comment\n")
      << "an assignment inside other text loses its first word, as in any output";
  const std::string plain = "NCCL_DEBUG=INFO\n\nNCCL_SOCKET_IFNAME=eth0\nno equals sign\n=\n";
  EXPECT_EQ(redact_secret_lines(plain), plain);
  EXPECT_EQ(redact_secret_lines("NCCL_PASSWORD=\n"), "NCCL_PASSWORD=\n") << "nothing to redact";
  EXPECT_EQ(redact_secret_lines("NCCL_PASSWORD=<redacted: 3 characters>"), "NCCL_PASSWORD=<redacted: 3 characters>");
  const std::string binary("MY_TOKEN=abc\0def\nx:y@host\n", 26);
  EXPECT_EQ(redact_secret_lines(binary, false), std::string("MY_TOKEN=<redacted: 7 characters>\nx:y@host\n"))
      << "a file with a NUL: its secret lines, not its URL-like bytes";
}

TEST(Redactor, KnownSecretsAreRedactedWhereverTheyAppear) {
  const std::string token = "hf_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";  // 39 characters
  const Redactor r(EnvSnapshot{
      {"HF_TOKEN", token}, {"NCCL_PASSWORD", "hunter"}, {"NCCL_IB_PKEY", "0x8001"}, {"NCCL_SOCKET_IFNAME", "eth0"}});
  EXPECT_EQ(r.text("token " + token + " in text"), "token <redacted: 39 characters> in text");
  EXPECT_EQ(r.text("glued" + token + "glued"), "glued<redacted: 39 characters>glued");
  // Cut off by a report's width: the prefix shown is redacted, with the whole value's length.
  EXPECT_EQ(r.text("value " + token.substr(0, 20) + "…"), "value <redacted: 39 characters>…");
  EXPECT_EQ(r.text(token.substr(0, 12)), "<redacted: 39 characters>");
  // A short secret only as a word of its own.
  EXPECT_EQ(r.text("the word hunter, not hunters"), "the word <redacted: 6 characters>, not hunters");
  EXPECT_EQ(r.text("NCCL_IB_PKEY 0x8001 on eth0"), "NCCL_IB_PKEY 0x8001 on eth0");
  EXPECT_TRUE(r.may_change("plain text"));  // it knows secrets: every text is searched
  EXPECT_FALSE(Redactor().may_change("plain text"));
}

TEST(Redactor, EscapedAndTrimmedFormsAndUrlPasswordsAreKnownToo) {
  const Redactor r(EnvSnapshot{{"NCCL_TEST_TOKEN",
                                "abc\x01"
                                "defghij"},
                               {"MASTER_ADDR", "http://admin:pa55word@node1"}});
  EXPECT_EQ(r.text("abc\\x01defghij"), "<redacted: 11 characters>");
  EXPECT_EQ(r.text("the password pa55word alone"), "the password <redacted: 8 characters> alone");
  EXPECT_EQ(r.text("http://admin:pa55word@node1"), "http://<redacted: 14 characters>@node1");
}

TEST(Redactor, ShortOrMarkerValuesAreNotSearchedFor) {
  Redactor r;
  r.add_secret("abc");
  r.add_secret("<redacted: 8 characters>");
  EXPECT_FALSE(r.knows_secrets());
  EXPECT_EQ(r.text("abc <redacted: 8 characters>"), "abc <redacted: 8 characters>");
}

TEST(Redactor, JsonSecretMembersAndNameValuePairsAreRedactedWhole) {
  const Redactor r;
  nlohmann::json doc = {
      {"HF_TOKEN", "ab"},
      {"token", "a parser's token"},
      {"variables", {{{"name", "NCCL_PASSWORD"}, {"value", "xy"}}, {{"name", "NCCL_IB_PKEY"}, {"value", "0x8001"}}}},
      {"master", "http://admin:pw@node1"},
      {"user:pw@node1", 1},
  };
  r.json(doc);
  EXPECT_EQ(doc["HF_TOKEN"], "<redacted: 2 characters>");
  EXPECT_EQ(doc["token"], "a parser's token");
  EXPECT_EQ(doc["variables"][0]["value"], "<redacted: 2 characters>");
  EXPECT_EQ(doc["variables"][1]["value"], "0x8001");
  EXPECT_EQ(doc["master"], "http://<redacted: 8 characters>@node1");
  EXPECT_FALSE(doc.contains("user:pw@node1"));
  EXPECT_TRUE(doc.contains("<redacted: 7 characters>@node1"));
  const nlohmann::json once = doc;
  r.json(doc);
  EXPECT_EQ(doc, once);
}

TEST(Redactor, AnEnvironmentKeepsItsNamesAndItsPublicValues) {
  const EnvSnapshot env{{"NCCL_PASSWORD", "hunter22"},
                        {"NCCL_IB_PKEY", "0x8001"},
                        {"NCCL_COMM_ID", "user:pw@node1:29500"},
                        {"NCCL_EMPTY_TOKEN", ""},
                        {"NCCL_OLD_TOKEN", "<redacted: 4 characters>"}};
  const EnvSnapshot shown = Redactor(env).env(env);
  EXPECT_EQ(shown.get("NCCL_PASSWORD"), "<redacted: 8 characters>");
  EXPECT_EQ(shown.get("NCCL_IB_PKEY"), "0x8001");
  EXPECT_EQ(shown.get("NCCL_COMM_ID"), "<redacted: 7 characters>@node1:29500");
  EXPECT_EQ(shown.get("NCCL_EMPTY_TOKEN"), "");
  EXPECT_EQ(shown.get("NCCL_OLD_TOKEN"), "<redacted: 4 characters>");
}

TEST(PasswdEntry, OnlyTheLineNcclReadsForTheUid) {
  const std::string passwd =
      "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n";
  EXPECT_EQ(passwd_entry(passwd, 1000), "alice:x:1000:1000::/home/alice:/bin/sh\n");
  EXPECT_EQ(passwd_home(passwd_entry(passwd, 1000), 1000), passwd_home(passwd, 1000));
  EXPECT_EQ(passwd_entry(passwd, 42), "");
  EXPECT_EQ(passwd_entry("broken\nnobody:x:7:7::/:/bin/false", 7), "nobody:x:7:7::/:/bin/false\n");
}

}  // namespace
}  // namespace core_redact_test
}  // namespace preflight
