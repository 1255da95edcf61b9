// SPDX-License-Identifier: MIT
// The nccl_names probe on a tree held in memory: the names of the libnccl.so.2 the job loads and of the
// plugins NCCL will dlopen, resolved by NCCL's naming rules, and the files NCCL variables name.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "elf_fixture.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace probes_nccl_names_probe_test {
namespace {

// An ELF64 object whose only sections are .rodata (holding `strings`) and the name table.
std::string elf_with(const std::vector<std::string>& strings) {
  std::string rodata;
  for (const std::string& s : strings) rodata += s + '\0';
  return elf_fixture::with_sections({{".rodata", 1, 0x2, rodata}});
}

class NcclNamesProbe : public ::testing::Test {
 protected:
  /// The tree before the test writes anything: /opt/nccl, /plugins and /etc, empty.
  static MemoryTree empty_tree() {
    MemoryTree t;
    t.dir("/opt/nccl").dir("/plugins").dir("/etc");
    return t;
  }
  void write(const std::string& path, const std::string& bytes) { tree.file(path, bytes); }
  RankFacts probe(std::map<std::string, std::string> env, bool with_library = true) {
    RankFacts facts;
    if (with_library) facts.gpu.runtime.nccl_candidates.push_back({"/opt/nccl/libnccl.so.2", "LD_LIBRARY_PATH", ""});
    const FileSystem file_system(tree);
    const EnvSnapshot snapshot(std::move(env));
    const Options options;
    probe_nccl_names(ProbeContext(file_system, snapshot, options), facts);
    return facts;
  }
  MemoryTree tree = empty_tree();
};

TEST_F(NcclNamesProbe, LibraryAndPluginsAsNcclNamesThem) {
  write("/opt/nccl/libnccl.so.2", elf_with({"NCCL_A_KNOB", "NCCL_ALGO was set to %s", "NCCL_DEBUG"}));
  write("/plugins/libnccl-net-foo.so", elf_with({"NCCL_FOO_PLUGIN_KNOB"}));
  write("/etc/topo.xml", "<system/>");
  const RankFacts f = probe({{"LD_LIBRARY_PATH", "/plugins"},
                             {"NCCL_NET_PLUGIN", "foo"},
                             {"NCCL_TUNER_PLUGIN", "missing"},
                             {"NCCL_PROFILER_PLUGIN", "NONE"},
                             {"NCCL_GRAPH_FILE", "/no/graph.xml"},
                             {"NCCL_TOPO_FILE", "/etc/topo.xml"}});
  const NcclNames& n = f.nccl_conf.names;
  ASSERT_TRUE(n.names.ok()) << n.names.why();
  EXPECT_EQ(*n.names.value(), (std::vector<std::string>{"NCCL_A_KNOB", "NCCL_DEBUG"}));
  ASSERT_EQ(n.plugins.size(), 2u);  // "none" loads no profiler
  EXPECT_EQ(n.plugins[0].kind, "net");
  EXPECT_EQ(n.plugins[0].tried, (std::vector<std::string>{"foo", "libnccl-net-foo.so"}));
  EXPECT_EQ(n.plugins[0].path, "/plugins/libnccl-net-foo.so");
  EXPECT_EQ(n.plugins[0].names, std::vector<std::string>{"NCCL_FOO_PLUGIN_KNOB"});
  EXPECT_EQ(n.plugins[1].kind, "tuner");
  EXPECT_EQ(n.plugins[1].variable, "NCCL_TUNER_PLUGIN");
  EXPECT_EQ(n.plugins[1].path, "");
  EXPECT_EQ(n.plugins[1].tried, (std::vector<std::string>{"missing", "libnccl-tuner-missing.so"}));
  ASSERT_EQ(f.nccl_conf.named_files.size(), 2u);
  EXPECT_EQ(f.nccl_conf.named_files[0].variable, "NCCL_TOPO_FILE");
  EXPECT_EQ(f.nccl_conf.named_files[0].state, "ok");
  EXPECT_EQ(f.nccl_conf.named_files[1].variable, "NCCL_GRAPH_FILE");
  EXPECT_EQ(f.nccl_conf.named_files[1].state, "not_found");
}

TEST_F(NcclNamesProbe, DefaultPluginNamesAndLibNames) {
  write("/opt/nccl/libnccl.so.2", elf_with({"NCCL_DEBUG"}));
  write("/plugins/libnccl-net.so", elf_with({"NCCL_DEFAULT_NET_KNOB"}));
  write("/plugins/libnccl-tuner-x.so", elf_with({"NCCL_X"}));
  // A lib*.so name is tried as given only: no libnccl-tuner-libnccl-tuner-x.so.so.
  const RankFacts f = probe({{"LD_LIBRARY_PATH", "/plugins"}, {"NCCL_TUNER_PLUGIN", "libnccl-tuner-x.so"}});
  const NcclNames& n = f.nccl_conf.names;
  ASSERT_EQ(n.plugins.size(), 3u);
  EXPECT_EQ(n.plugins[0].path, "/plugins/libnccl-net.so");
  EXPECT_EQ(n.plugins[0].variable, "");
  EXPECT_EQ(n.plugins[1].tried, std::vector<std::string>{"libnccl-tuner-x.so"});
  EXPECT_EQ(n.plugins[1].path, "/plugins/libnccl-tuner-x.so");
  EXPECT_EQ(n.plugins[2].tried, std::vector<std::string>{"libnccl-profiler.so"});
  EXPECT_EQ(n.plugins[2].path, "");
}

TEST_F(NcclNamesProbe, NoLibraryOrNotAnElfIsAnErrorNamingWhy) {
  RankFacts f = probe({}, false);
  EXPECT_FALSE(f.nccl_conf.names.names.ok());
  write("/opt/nccl/libnccl.so.2", "not an ELF file, just text that is long enough to be read as a header.......");
  f = probe({});
  ASSERT_FALSE(f.nccl_conf.names.names.ok());
  EXPECT_EQ(f.nccl_conf.names.names.error()->code, ProbeErrc::ParseError);
  f = probe({});        // and the missing file is NotFound
  tree = empty_tree();  // without /opt/nccl/libnccl.so.2
  f = probe({});
  ASSERT_FALSE(f.nccl_conf.names.names.ok());
  EXPECT_EQ(f.nccl_conf.names.names.error()->code, ProbeErrc::NotFound) << f.nccl_conf.names.names.why();
}

}  // namespace
}  // namespace probes_nccl_names_probe_test
}  // namespace preflight
