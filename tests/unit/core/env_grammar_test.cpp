// SPDX-License-Identifier: MIT
#include "core/env_grammar.hpp"

#include <gtest/gtest.h>

#include <string>

namespace preflight {
namespace core_env_grammar_test {
namespace {

TEST(EnvGrammar, NcclIntIsStrtollBaseZero) {
  struct Case {
    const char* text;
    std::optional<std::int64_t> value;
  };
  const Case cases[] = {
      {"1", 1},   {"true", 0},  {"yes", 0},         {"010", 8}, {"0x10", 16}, {"1abc", 1},
      {"  7", 7}, {"-1", -1},   {"", std::nullopt}, {"   ", 0}, {"09", 0},    {"99999999999999999999", std::nullopt},
      {"1\r", 1}, {"0X1f", 31},
  };
  for (const Case& c : cases) EXPECT_EQ(nccl_int_value(c.text), c.value) << "'" << c.text << "'";
}

// NCCL_ALGO / NCCL_PROTO as parseList (src/graph/tuning.cc) reads them: the boundary is 2.24.3-1,
// where per-collective entries came and unknown tokens turned from skipped into ncclInvalidUsage.
TEST(EnvGrammar, NcclSelectionFollowsTheLoadedRelease) {
  const Grammar algo = *parse_grammar("select:Ring|Tree|CollNetDirect|CollNetChain|NVLS|NVLSTree|PAT", false);
  const Grammar proto = *parse_grammar("select:LL|LL128|Simple", false);
  const std::optional<Version> v2_28 = Version::parse("2.28.9"), v2_24 = Version::parse("2.24.3"),
                               v2_23 = Version::parse("2.23.4"), v2_21 = Version::parse("2.21.5");
  const auto status = [](const Grammar& g, std::string_view value, const std::optional<Version>& v) {
    return read_nccl_selection(g, value, v).status;
  };
  // From 2.24.3: refused at init.
  for (const auto& v : {v2_28, v2_24}) {
    EXPECT_EQ(status(algo, "Ring,Foo", v), Status::Fail);
    EXPECT_EQ(status(proto, "LL129", v), Status::Fail);
    EXPECT_EQ(status(algo, "allreduce:foo", v), Status::Fail);
    EXPECT_EQ(status(algo, "allreduce:ring;bogus:tree", v), Status::Fail);
    EXPECT_EQ(status(algo, "ring;tree", v), Status::Fail);  // a later entry without its collective
    EXPECT_EQ(status(algo, "ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring", v), Status::Pass);
    EXPECT_EQ(status(proto, "LL,Simple;allreduce:^LL", v), Status::Pass);
    EXPECT_EQ(status(proto, "^LL128;allreduce:LL128", v), Status::Pass);
    EXPECT_EQ(status(algo, "AllReduce:Tree", v), Status::Pass);
    EXPECT_EQ(status(proto, "^LL,LL128,Simple", v), Status::Fail);  // nothing left for any collective
  }
  const ValueReading refused = read_nccl_selection(algo, "allreduce:ring;bogus:tree", v2_28);
  EXPECT_EQ(refused.problem,
            "NCCL 2.28.9 refuses it (ncclInvalidUsage: every communicator init fails): unknown collective 'bogus' "
            "(known: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)");
  EXPECT_EQ(read_nccl_selection(proto, "LL129", v2_24).problem,
            "NCCL 2.24.3 refuses it (ncclInvalidUsage: every communicator init fails): unknown name 'LL129' (known: "
            "LL, LL128, Simple)");
  // Before 2.24.3: one list; unknown names skipped, and nothing known enables nothing.
  for (const auto& v : {v2_23, v2_21}) {
    EXPECT_EQ(status(algo, "Ring,Foo", v), Status::Warn);
    EXPECT_EQ(status(proto, "LL129", v), Status::Fail);
    EXPECT_EQ(status(algo, "allreduce:tree", v), Status::Fail);
    EXPECT_EQ(status(algo, "^allreduce:tree", v), Status::Warn);  // '^' of nothing known: all stay on
    EXPECT_EQ(status(proto, "^LL128", v), Status::Pass);
  }
  EXPECT_EQ(read_nccl_selection(algo, "Ring,Foo", v2_23).problem,
            "NCCL 2.23.4 skips the unknown name 'Foo' (known: Ring, Tree, CollNetDirect, CollNetChain, NVLS, "
            "NVLSTree, PAT)");
  EXPECT_TRUE(read_nccl_selection(algo, "allreduce:tree", v2_21).problem.find("need NCCL 2.24.3 or later") !=
              std::string::npos);
  // No loaded NCCL: the newest rule, said so.
  const ValueReading assumed = read_nccl_selection(algo, "Ring,Foo", std::nullopt);
  EXPECT_EQ(assumed.status, Status::Fail);
  EXPECT_TRUE(assumed.problem.starts_with("NCCL (no loaded library's version known: the rule of 2.24.3 and later)"))
      << assumed.problem;
}

TEST(EnvGrammar, CleanIntegers) {
  for (const char* ok : {"0", "1", "-1", "42", "0x10", "0XfF", "-0x1"}) EXPECT_TRUE(is_clean_int(ok)) << ok;
  for (const char* bad : {"", "010", "1abc", " 1", "1 ", "true", "0x", "-", "+1", "1\r"})
    EXPECT_FALSE(is_clean_int(bad)) << bad;
}

TEST(EnvGrammar, BooleanWordIntent) {
  for (const char* yes : {"true", "TRUE", "Yes", "on", "y", "T"}) EXPECT_EQ(boolean_word_intent(yes), true) << yes;
  for (const char* no : {"false", "No", "OFF", "n", "f"}) EXPECT_EQ(boolean_word_intent(no), false) << no;
  for (const char* other : {"1", "0", "enable", "", "maybe"}) EXPECT_FALSE(boolean_word_intent(other)) << other;
}

TEST(EnvGrammar, TorchBoolIsGetCvarBool) {
  for (const char* yes : {"1", "y", "YES", "t", "True"}) EXPECT_EQ(torch_bool_value(yes), true) << yes;
  for (const char* no : {"0", "n", "No", "f", "FALSE"}) EXPECT_EQ(torch_bool_value(no), false) << no;
  for (const char* bad : {"", "on", "off", "2", " 1", "1 ", "maybe"})
    EXPECT_FALSE(torch_bool_value(bad)) << "'" << bad << "'";
}

TEST(EnvGrammar, TorchIntIsStoi) {
  EXPECT_EQ(torch_int_value("3"), 3);
  EXPECT_EQ(torch_int_value(" 2"), 2);
  EXPECT_EQ(torch_int_value("1abc"), 1);
  EXPECT_EQ(torch_int_value("-1"), -1);
  EXPECT_EQ(torch_int_value("010"), 10);  // decimal, unlike NCCL
  EXPECT_FALSE(torch_int_value(""));
  EXPECT_FALSE(torch_int_value("abc"));
  EXPECT_FALSE(torch_int_value("99999999999"));
}

TEST(EnvGrammar, ParseGrammar) {
  const auto g = parse_grammar("int:0..3", false);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->kind, Grammar::Kind::Int);
  EXPECT_EQ(g->min, 0);
  EXPECT_EQ(g->max, 3);
  const auto e = parse_grammar("ienum:OFF|INFO", true);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->any_case);
  EXPECT_TRUE(e->invalid_raises);
  EXPECT_EQ(e->choices.size(), 2u);
  for (const char* bad : {"float", "int:3..1", "int:x", "enum:", "enum:A||B", "string:x", "torch_bool:1..2"}) {
    EXPECT_FALSE(parse_grammar(bad, false)) << bad;
  }
}

struct ReadCase {
  const char* type;
  bool raises;
  const char* value;
  Status status;
  const char* reads_as;
  const char* fix;
};

TEST(EnvGrammar, ReadValueStatusesPerConsumer) {
  const ReadCase cases[] = {
      {"int:0..1", false, "1", Status::Pass, "1", ""},
      {"int:0..1", false, "true", Status::Fail, "0", "1"},
      {"int:0..1", false, "on", Status::Fail, "0", "1"},
      {"int:0..1", false, "false", Status::Warn, "0", "0"},
      {"int", false, "010", Status::Warn, "8", "10"},  // the decimal the writer meant
      {"int", false, "0x10", Status::Pass, "16", ""},
      {"int", false, "1abc", Status::Warn, "1", ""},  // no evident intent: the remedy names the form
      {"int", false, "", Status::Pass, "default", ""},
      {"int", false, "99999999999999999999", Status::Warn, "default", ""},
      {"int:1..24", false, "30", Status::Warn, "30", ""},
      {"torch_bool", true, "yes", Status::Pass, "true", ""},
      {"torch_bool", true, "on", Status::Fail, "error", ""},
      {"torch_bool", true, "", Status::Fail, "error", ""},
      {"torch_int:0..3", true, "3", Status::Pass, "3", ""},
      {"torch_int:0..3", true, "4", Status::Warn, "4", ""},  // getCvarInt applies no range
      {"torch_int:0..3", true, "x", Status::Fail, "error", ""},
      {"torch_int:0..3", true, "2abc", Status::Warn, "2", ""},
      {"int:64..512/32", false, "256", Status::Pass, "256", ""},
      {"int:64..512/32", false, "100", Status::Warn, "100", ""},
      {"int:64..512/32", false, "1024", Status::Warn, "1024", ""},
      {"hostport", false, "10.0.0.1:29500", Status::Pass, "10.0.0.1:29500", ""},
      {"hostport", false, "[fe80::1]:29500", Status::Pass, "[fe80::1]:29500", ""},
      {"hostport", false, "node01:29500", Status::Pass, "node01:29500", ""},
      {"hostport", false, "10.0.0.1", Status::Fail, "error", ""},
      {"hostport", false, "10.0.0.1:http", Status::Fail, "error", ""},
      {"hostport", false, ":29500", Status::Fail, "error", ""},
      {"hostport", false, "10.0.0.1:70000", Status::Fail, "error", ""},
      {"enum:LOC|NVL|SYS|0|1", false, "NVL", Status::Pass, "NVL", ""},
      {"enum:LOC|NVL|SYS|0|1", false, "nvl", Status::Warn, "default", "NVL"},
      {"enum:LOC|NVL|SYS|0|1", false, "nvlink", Status::Warn, "default", ""},
      {"enum:LOC|NVL|SYS|0|1", false, "1", Status::Warn, "1", ""},
      {"ienum:VERSION|WARN|INFO", false, "info", Status::Pass, "INFO", ""},
      {"ienum:OFF|INFO|DETAIL", true, "DEBUG", Status::Fail, "error", ""},
      {"list:Ring|Tree", false, "^ring,TREE", Status::Pass, "^ring,TREE", ""},
      {"list:Ring|Tree", false, "Rign", Status::Warn, "Rign", ""},
      {"list:Ring|Tree", false, "allreduce:tree;broadcast:ring", Status::Pass, "allreduce:tree;broadcast:ring", ""},
      {"string", false, "eth0\r", Status::Warn, "eth0\r", "eth0"},
      {"string", false, "eth0", Status::Pass, "eth0", ""},
      {"path", false, "~/nccl.log", Status::Warn, "~/nccl.log", ""},
  };
  for (const ReadCase& c : cases) {
    const auto g = parse_grammar(c.type, c.raises);
    ASSERT_TRUE(g) << c.type;
    const ValueReading r = read_value(*g, c.value);
    EXPECT_EQ(r.status, c.status) << c.type << " '" << c.value << "': " << r.problem;
    EXPECT_EQ(r.reads_as, c.reads_as) << c.type << " '" << c.value << "'";
    EXPECT_EQ(r.fix, c.fix) << c.type << " '" << c.value << "'";
    EXPECT_EQ(r.problem.empty(), c.status == Status::Pass) << c.type << " '" << c.value << "'";
  }
}

TEST(EnvGrammar, IntendedIntegerReadsTheUnitTheWriterUsed) {
  using U = Grammar::Unit;
  EXPECT_EQ(intended_integer("8M", U::Bytes), 8388608);
  EXPECT_EQ(intended_integer("8MiB", U::Bytes), 8388608);
  EXPECT_EQ(intended_integer("4 kb", U::Bytes), 4096);
  EXPECT_EQ(intended_integer("1G", U::Bytes), 1073741824);
  EXPECT_EQ(intended_integer("10m", U::Seconds), 600);
  EXPECT_EQ(intended_integer("2h", U::Seconds), 7200);
  EXPECT_EQ(intended_integer("30s", U::Seconds), 30);
  EXPECT_EQ(intended_integer("5s", U::Milliseconds), 5000);
  EXPECT_EQ(intended_integer(" 12 ", U::None), 12);             // white space around a plain integer
  EXPECT_EQ(intended_integer("8G", U::Seconds), std::nullopt);  // G is no unit of time
  EXPECT_EQ(intended_integer("three", U::Bytes), std::nullopt);
  EXPECT_EQ(intended_integer("1abc", U::Bytes), std::nullopt);
  EXPECT_EQ(intended_integer("8M", U::None), std::nullopt);
  EXPECT_EQ(intended_integer("99999999999999999999M", U::Bytes), std::nullopt);
}

TEST(EnvGrammar, UnitsBecomeTheFixAndOnlyCleanFixesAreProposed) {
  Grammar bytes = *parse_grammar("int:1..2147483647", false);
  bytes.unit = Grammar::Unit::Bytes;
  ValueReading r = read_value(bytes, "8M");
  EXPECT_EQ(r.status, Status::Warn);
  EXPECT_EQ(r.reads_as, "8");
  EXPECT_EQ(r.fix, "8388608");
  EXPECT_NE(r.problem.find("8M is 8388608 bytes"), std::string::npos) << r.problem;
  EXPECT_EQ(read_value(bytes, "4G").fix, "");  // 4 GiB is outside the range: not proposed
  Grammar seconds = *parse_grammar("torch_int", true);
  seconds.unit = Grammar::Unit::Seconds;
  r = read_value(seconds, "10m");
  EXPECT_EQ(r.status, Status::Warn);
  EXPECT_EQ(r.reads_as, "10");
  EXPECT_EQ(r.fix, "600");
  r = read_value(seconds, "m10");  // std::stoi throws: torch raises, and the unit still tells the intent
  EXPECT_EQ(r.status, Status::Fail);
  EXPECT_EQ(read_value(seconds, "5400").status, Status::Pass);  // no invented range
}

TEST(EnvGrammar, CudaIntegersAreNotDescribedAsNcclsStrtoll) {
  Grammar g = *parse_grammar("int:1..32", false);
  g.reader = "CUDA";
  const ValueReading r = read_value(g, "abc");
  EXPECT_EQ(r.status, Status::Warn);
  EXPECT_EQ(r.problem.find("strtoll"), std::string::npos) << r.problem;
  EXPECT_EQ(r.problem.find("NCCL"), std::string::npos) << r.problem;
  EXPECT_NE(r.problem.find("CUDA"), std::string::npos) << r.problem;
  EXPECT_EQ(read_value(g, "64").status, Status::Warn);
  EXPECT_EQ(read_value(g, "yes").fix, "1");  // the evident intent, within the range
  EXPECT_EQ(read_value(g, "8").status, Status::Pass);
}

TEST(EnvGrammar, ReadValueSurvivesGarbage) {
  const std::string garbage = std::string("\x01\xff\xfe\x80", 4) + std::string(100000, 'x');
  for (const char* type :
       {"int", "torch_bool", "torch_int", "enum:A|B", "list:A|B", "string", "path", "hostport", "int:1..8/2"}) {
    const auto g = parse_grammar(type, false);
    ASSERT_TRUE(g);
    const ValueReading r = read_value(*g, garbage);
    EXPECT_LT(r.problem.size(), 1000u) << type;
  }
}

TEST(EnvGrammar, ConfFileFollowsSetEnvFile) {
  const std::string text =
      "# comment\n"
      "\n"
      "NCCL_DEBUG=WARN\n"
      "NCCL_IB_TIMEOUT = 22\n"
      "no equals sign here\n"
      "   # indented comment\n"
      "NCCL_SOCKET_IFNAME=eth0\r\n"
      "=orphan\n"
      "NCCL_ALGO=Ring=Tree\n"
      "   \n"
      "NCCL_LAST=1";
  const ConfFileContents c = parse_nccl_conf(text);
  ASSERT_EQ(c.entries.size(), 5u);
  EXPECT_EQ(c.entries[0].name, "NCCL_DEBUG");
  EXPECT_EQ(c.entries[0].value, "WARN");
  EXPECT_EQ(c.entries[0].line, 3);
  EXPECT_EQ(c.entries[1].name, "NCCL_IB_TIMEOUT ");  // NCCL keeps the spaces
  EXPECT_EQ(c.entries[1].value, " 22");
  EXPECT_EQ(c.entries[2].value, "eth0\r");  // only '\n' is removed
  EXPECT_EQ(c.entries[3].value, "Ring=Tree");
  EXPECT_EQ(c.entries[4].name, "NCCL_LAST");
  EXPECT_EQ(c.entries[4].line, 11);
  EXPECT_EQ(c.malformed_lines, (std::vector<int>{5, 8}));
}

TEST(EnvGrammar, ConfFileLongLinesAndBinary) {
  const std::string long_line = "NCCL_X=" + std::string(5000, 'v') + "\n" + std::string(2000, 'N') + "=1\n";
  const ConfFileContents c = parse_nccl_conf(long_line);
  ASSERT_EQ(c.entries.size(), 2u);
  EXPECT_EQ(c.entries[0].value.size(), 1023u);
  EXPECT_EQ(c.entries[1].name.size(), 1023u);

  static constexpr char kBinary[] = "NCCL_A=1\0NCCL_B=2\n\xff\xfe\x00=\n\x7f\x80=\x01\n";
  const std::string binary(kBinary, sizeof kBinary - 1);
  const ConfFileContents b = parse_nccl_conf(binary);
  ASSERT_EQ(b.entries.size(), 2u);
  EXPECT_EQ(b.entries[0].name, "NCCL_A");
  EXPECT_EQ(b.entries[0].value, "1");  // cut at the NUL, like NCCL's C strings
  EXPECT_EQ(b.entries[1].name, "\x7f\x80");
  EXPECT_EQ(b.malformed_lines, (std::vector<int>{2}));
}

TEST(EnvGrammar, EnvNamesAndPasswd) {
  EXPECT_TRUE(is_env_name("NCCL_DEBUG"));
  EXPECT_TRUE(is_env_name("_x1"));
  for (const char* bad : {"", "1A", "NCCL_DEBUG ", "A-B", " A"}) EXPECT_FALSE(is_env_name(bad)) << bad;
  const std::string passwd = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\nbroken\n";
  EXPECT_EQ(passwd_home(passwd, 0), "/root");
  EXPECT_EQ(passwd_home(passwd, 1000), "/home/alice");
  EXPECT_FALSE(passwd_home(passwd, 42));
}

}  // namespace
}  // namespace core_env_grammar_test
}  // namespace preflight
