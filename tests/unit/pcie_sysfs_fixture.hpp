// SPDX-License-Identifier: MIT
// A generated sysfs/procfs tree of a two-socket GPU server, for the pcie and affinity probes:
//   pci0000:00  root port 00:01.0 - switch 01:00.0 - ports 02:00.0, 02:01.0, 02:02.0
//               - GPU 03:00.0, GPU 04:00.0, NIC 05:00.0 (ConnectX, class 0x020700)   NUMA 0, CPUs 0-15
//   pci0000:80  root port 80:01.0 - switch 81:00.0 - ports 82:00.0, 82:01.0, 82:02.0
//               - GPU 83:00.0, GPU 84:00.0 (numa_node -1), NIC 85:00.0                NUMA 1, CPUs 16-31
// Root ports and downstream ports have an ACS capability (after AER in the extended list); the
// switches' upstream ports have none. Config blobs are built here, never committed. Below it, a
// Grace + ConnectX-8 DMA-direct node (build_grace_cx8).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace preflight::pcie_fixture {

struct TreeOptions {
  std::uint16_t socket1_port_ctrl = 0x001d;  // ACS Control of 82:0x.0: SV RR CR UF (what the kernel sets)
  std::uint16_t other_ctrl = 0;              // ACS Control of every other ACS-capable bridge
  std::size_t config_bytes = 4096;           // 64: what a non-root reader gets
  std::string group_type = "DMA";            // /sys/kernel/iommu_groups/N/type
  bool iommu_units = true;                   // /sys/class/iommu/dmar0, dmar1
  bool hypervisor = false;                   // the cpuinfo flag
  std::string cmdline = "BOOT_IMAGE=/vmlinuz-6.1.0 root=/dev/nvme0n1p2 ro intel_iommu=on";
};

inline void write_file(const std::filesystem::path& p, const std::string& data) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

inline void put32(std::string& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
}

/// A 4096-byte config space: vendor/device, then AER at 0x100 and, when acs, ACS at 0x148 with ctrl.
inline std::string config_blob(bool acs, std::uint16_t ctrl, std::size_t keep = 4096) {
  std::string b(4096, '\0');
  put32(b, 0, 0x1af08086u);                                    // vendor 8086, device 1af0
  put32(b, 0x100, 0x00010001u | (acs ? (0x148u << 20) : 0u));  // AER v1, next 0x148 or end
  put32(b, 0x104, 0);
  if (acs) {
    put32(b, 0x148, 0x0001000du);                                         // ACS v1, end of list
    put32(b, 0x14c, 0x005fu | (static_cast<std::uint32_t>(ctrl) << 16));  // cap SV TB RR CR UF DT, ctrl
  }
  b.resize(keep);
  return b;
}

struct Device {
  std::string path;  // below /sys/devices: "pci0000:00/0000:00:01.0/..."
  std::string cls;
  std::string vendor;
  std::string device;
  std::string numa;
  std::string cpulist;
  int group = -1;
  std::string driver;
  bool acs = false;
  std::uint16_t ctrl = 0;
};

inline std::string bdf_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

inline void add_device(const std::filesystem::path& root, const Device& d, const TreeOptions& o) {
  namespace fs = std::filesystem;
  const fs::path dir = root / "sys/devices" / d.path;
  fs::create_directories(dir);
  write_file(dir / "class", d.cls + "\n");
  write_file(dir / "vendor", d.vendor + "\n");
  write_file(dir / "device", d.device + "\n");
  write_file(dir / "numa_node", d.numa + "\n");
  write_file(dir / "local_cpulist", d.cpulist + "\n");
  write_file(dir / "config", config_blob(d.acs, d.ctrl, o.config_bytes));
  const std::string bdf = bdf_of(d.path);
  fs::create_directories(root / "sys/bus/pci/devices");
  fs::create_directory_symlink("../../../devices/" + d.path, root / "sys/bus/pci/devices" / bdf);
  std::string dots;
  for (std::size_t i = 0; i < static_cast<std::size_t>(std::count(d.path.begin(), d.path.end(), '/')) + 2; ++i)
    dots += "../";
  if (d.group >= 0) {
    const fs::path g = root / "sys/kernel/iommu_groups" / std::to_string(d.group);
    fs::create_directories(g / "devices");
    write_file(g / "type", o.group_type + "\n");
    fs::create_directory_symlink("../../../../devices/" + d.path, g / "devices" / bdf);
    fs::create_directory_symlink(dots + "kernel/iommu_groups/" + std::to_string(d.group), dir / "iommu_group");
  }
  if (!d.driver.empty()) {
    fs::create_directories(root / "sys/bus/pci/drivers" / d.driver);
    fs::create_directory_symlink(dots + "bus/pci/drivers/" + d.driver, dir / "driver");
  }
}

/// Builds the tree under root (which must exist and be empty).
inline void build_two_socket(const std::filesystem::path& root, const TreeOptions& o = {}) {
  const std::string s0 = "pci0000:00/0000:00:01.0", s1 = "pci0000:80/0000:80:01.0";
  const std::string bridge = "0x060400";
  std::vector<Device> devs = {
      {s0, bridge, "0x8086", "0x347a", "0", "0-15", -1, "pcieport", true, o.other_ctrl},
      {s0 + "/0000:01:00.0", bridge, "0x1000", "0xc030", "0", "0-15", -1, "pcieport", false, 0},
      {s0 + "/0000:01:00.0/0000:02:00.0", bridge, "0x1000", "0xc030", "0", "0-15", -1, "pcieport", true, o.other_ctrl},
      {s0 + "/0000:01:00.0/0000:02:01.0", bridge, "0x1000", "0xc030", "0", "0-15", -1, "pcieport", true, o.other_ctrl},
      {s0 + "/0000:01:00.0/0000:02:02.0", bridge, "0x1000", "0xc030", "0", "0-15", -1, "pcieport", true, o.other_ctrl},
      {s0 + "/0000:01:00.0/0000:02:00.0/0000:03:00.0", "0x030200", "0x10de", "0x2330", "0", "0-15", 30, "nvidia", false,
       0},
      {s0 + "/0000:01:00.0/0000:02:01.0/0000:04:00.0", "0x030200", "0x10de", "0x2330", "0", "0-15", 31, "nvidia", false,
       0},
      {s0 + "/0000:01:00.0/0000:02:02.0/0000:05:00.0", "0x020700", "0x15b3", "0x1021", "0", "0-15", 32, "mlx5_core",
       false, 0},
      {s1, bridge, "0x8086", "0x347a", "1", "16-31", -1, "pcieport", true, o.other_ctrl},
      {s1 + "/0000:81:00.0", bridge, "0x1000", "0xc030", "1", "16-31", -1, "pcieport", false, 0},
      {s1 + "/0000:81:00.0/0000:82:00.0", bridge, "0x1000", "0xc030", "1", "16-31", -1, "pcieport", true,
       o.socket1_port_ctrl},
      {s1 + "/0000:81:00.0/0000:82:01.0", bridge, "0x1000", "0xc030", "1", "16-31", -1, "pcieport", true,
       o.socket1_port_ctrl},
      {s1 + "/0000:81:00.0/0000:82:02.0", bridge, "0x1000", "0xc030", "1", "16-31", -1, "pcieport", true,
       o.socket1_port_ctrl},
      {s1 + "/0000:81:00.0/0000:82:00.0/0000:83:00.0", "0x030200", "0x10de", "0x2330", "1", "16-31", 40, "nvidia",
       false, 0},
      {s1 + "/0000:81:00.0/0000:82:01.0/0000:84:00.0", "0x030200", "0x10de", "0x2330", "-1", "16-31", 41, "nvidia",
       false, 0},
      {s1 + "/0000:81:00.0/0000:82:02.0/0000:85:00.0", "0x020700", "0x15b3", "0x1021", "1", "16-31", 42, "mlx5_core",
       false, 0},
      {"pci0000:00/0000:00:17.0", "0x010601", "0x8086", "0x1bd2", "0", "0-15", 5, "ahci", false, 0},  // SATA: ignored
  };
  for (const Device& d : devs) add_device(root, d, o);
  if (o.iommu_units) {
    std::filesystem::create_directories(root / "sys/class/iommu/dmar0");
    std::filesystem::create_directories(root / "sys/class/iommu/dmar1");
  } else {
    std::filesystem::create_directories(root / "sys/class/iommu");
  }
  write_file(root / "proc/cmdline", o.cmdline + "\n");
  write_file(root / "proc/cpuinfo",
             std::string("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme de pse tsc msr") +
                 (o.hypervisor ? " hypervisor" : "") + " lahf_lm\n\n");
  write_file(root / "sys/devices/system/cpu/online", "0-31\n");
  write_file(root / "sys/devices/system/cpu/possible", "0-31\n");
  write_file(root / "sys/devices/system/node/possible", "0-1\n");
  write_file(root / "sys/devices/system/node/node0/cpulist", "0-15\n");
  write_file(root / "sys/devices/system/node/node1/cpulist", "16-31\n");
  write_file(root / "proc/self/status", "Name:\tpython\nCpus_allowed_list:\t0-31\nMems_allowed_list:\t0-1\n");
}

/// A Grace + ConnectX-8 DMA-direct node as rdma-core's kernel-boot/rdma_topo describes it (commit
/// 691953d8d502f54088f776c5ba2aeed0a5ac945d, __get_nvcx_complex):
///   pci0008:00  Grace root port 0008:00:00.0 (10de:22b1) - ConnectX switch 0008:01:00.0 (15b3:197c)
///               - port 0008:02:00.0 - DMA function 0008:03:00.0 (15b3:2100)
///               - port 0008:02:01.0 - ConnectX switch 0008:04:00.0 - port 0008:05:00.0 - GPU 0008:06:00.0
///   pci0009:00  Grace root port 0009:00:00.0 - ConnectX switch 0009:01:00.0 - port 0009:02:00.0
///               - ConnectX-8 NIC PFs 0009:03:00.0, 0009:03:00.1 (15b3:1023)
/// Each port's ACS Control as rdma_topo sets it unless told otherwise; upstream ports have no ACS.
struct GraceOptions {
  std::uint16_t rp_ctrl = 0x001c;       // the Grace root port above the DMA complex: xx111x0
  std::uint16_t dma_dsp_ctrl = 0x0019;  // the port toward the DMA function: xx110x1
  std::uint16_t gpu_dsp_ctrl = 0x0015;  // the port toward the GPU: xx101x1
  std::uint16_t other_ctrl = 0x001d;    // every other ConnectX port and Grace root port: xx111x1
  int dma_group = 8;
  int gpu_group = 8;
  bool nic_ats = false;
  std::size_t config_bytes = 4096;
};

/// A 4096-byte config space whose extended list holds only ATS (ID 0x0f) at 0x100, or nothing.
inline std::string config_blob_ats(bool ats, std::size_t keep = 4096) {
  std::string b(4096, '\0');
  put32(b, 0, 0x102315b3u);
  if (ats) put32(b, 0x100, 0x0001000fu);  // ATS v1, end of list
  b.resize(keep);
  return b;
}

inline void build_grace_cx8(const std::filesystem::path& root, const GraceOptions& g = {}) {
  TreeOptions o;
  o.group_type = "identity";
  o.config_bytes = g.config_bytes;
  o.cmdline = "BOOT_IMAGE=/boot/vmlinuz-6.8.0-nvidia-64k root=/dev/nvme0n1p2 ro iommu.passthrough=1";
  const std::string rp = "pci0008:00/0008:00:00.0", usp = rp + "/0008:01:00.0", dsp1 = usp + "/0008:02:01.0";
  const std::string usp2 = dsp1 + "/0008:04:00.0", dsp2 = usp2 + "/0008:05:00.0";
  const std::string rp9 = "pci0009:00/0009:00:00.0", dsp9 = rp9 + "/0009:01:00.0/0009:02:00.0";
  const std::string br = "0x060400", sw = "0x197c", cpus = "0-71";
  const std::vector<Device> devs = {
      {rp, br, "0x10de", "0x22b1", "0", cpus, -1, "pcieport", true, g.rp_ctrl},
      {usp, br, "0x15b3", sw, "0", cpus, -1, "pcieport", false, 0},
      {usp + "/0008:02:00.0", br, "0x15b3", sw, "0", cpus, -1, "pcieport", true, g.dma_dsp_ctrl},
      {usp + "/0008:02:00.0/0008:03:00.0", "0x080100", "0x15b3", "0x2100", "0", cpus, g.dma_group, "", false, 0},
      {dsp1, br, "0x15b3", sw, "0", cpus, -1, "pcieport", true, g.gpu_dsp_ctrl},
      {usp2, br, "0x15b3", sw, "0", cpus, -1, "pcieport", false, 0},
      {dsp2, br, "0x15b3", sw, "0", cpus, -1, "pcieport", true, g.other_ctrl},
      {dsp2 + "/0008:06:00.0", "0x030200", "0x10de", "0x2941", "0", cpus, g.gpu_group, "nvidia", false, 0},
      {rp9, br, "0x10de", "0x22b1", "0", cpus, -1, "pcieport", true, g.other_ctrl},
      {rp9 + "/0009:01:00.0", br, "0x15b3", sw, "0", cpus, -1, "pcieport", false, 0},
      {dsp9, br, "0x15b3", sw, "0", cpus, -1, "pcieport", true, g.other_ctrl},
      {dsp9 + "/0009:03:00.0", "0x020700", "0x15b3", "0x1023", "0", cpus, 9, "mlx5_core", false, 0},
      {dsp9 + "/0009:03:00.1", "0x020700", "0x15b3", "0x1023", "0", cpus, 10, "mlx5_core", false, 0},
  };
  for (const Device& d : devs) add_device(root, d, o);
  for (const char* pf : {"/0009:03:00.0", "/0009:03:00.1"}) {
    write_file(root / "sys/devices" / (dsp9 + pf) / "config", config_blob_ats(g.nic_ats, g.config_bytes));
  }
  std::filesystem::create_directories(root / "sys/class/iommu/smmu3.0x0000000016000000");
  write_file(root / "proc/cmdline", o.cmdline + "\n");
  write_file(root / "proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes\n\n");
}

/// A temporary directory removed at the end of the test.
class TempTree {
 public:
  TempTree() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "preflight-pcie-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) m_path = tmpl;
  }
  ~TempTree() {
    std::error_code ec;
    if (!m_path.empty()) std::filesystem::remove_all(m_path, ec);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

}  // namespace preflight::pcie_fixture
