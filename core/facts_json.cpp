// SPDX-License-Identifier: MIT
// The JSON conversions of the fact structs (core/facts.hpp, core/facts/*.hpp; the GPU stack's are
// in core/facts_gpu_json.cpp), defined once here: the keys are the field names, a missing key keeps
// the field's default.
#include "core/facts.hpp"

namespace preflight {

PREFLIGHT_JSON_DEFINE(Identity, hostname, boot_id, kernel, pid)
PREFLIGHT_JSON_DEFINE(MpiView, rank, size, local_rank, local_size, nodes, singleton, library, node_cvd)
PREFLIGHT_JSON_DEFINE(Placement, rank, world_size, local_rank, local_ranks, nodes, node_rank, launcher, source, mpi,
                      launcher_gone)
PREFLIGHT_JSON_DEFINE(NodeFactsOrigin, leader_rank, adopted, probed_here)
PREFLIGHT_JSON_DEFINE(RankFacts, identity, placement, env, shm, memory, limits, nccl_conf, gpu, topology, pcie,
                      affinity, net, disk, probe_seconds, node_facts)
PREFLIGHT_JSON_DEFINE(MemPolicy, mode, nodes)
PREFLIGHT_JSON_DEFINE(NodeCpus, node, cpus)
PREFLIGHT_JSON_DEFINE(AffinityFacts, cpus, mempolicy, online_cpus, mems_allowed, numa_nodes)
PREFLIGHT_JSON_DEFINE(Rlimit, soft, hard)
PREFLIGHT_JSON_DEFINE(LimitsFacts, memlock, nofile, core, cap_ipc_lock, core_pattern, rdma_devices)
PREFLIGHT_JSON_DEFINE(MemInfo, mem_total, mem_available, swap_total, swap_free)
PREFLIGHT_JSON_DEFINE(CgroupMemory, version, path, limit, usage, inactive_file, swap_limit)
PREFLIGHT_JSON_DEFINE(MemoryFacts, meminfo, cgroup)
PREFLIGHT_JSON_DEFINE(ConfEntry, name, value, line)
PREFLIGHT_JSON_DEFINE(ConfFileContents, entries, malformed_lines)
PREFLIGHT_JSON_DEFINE(ConfFile, path, role, contents)
PREFLIGHT_JSON_DEFINE(NcclPlugin, kind, requested, variable, path, tried, names)
PREFLIGHT_JSON_DEFINE(NcclNames, library, version, names, plugins)
PREFLIGHT_JSON_DEFINE(NcclNamedFile, variable, path, state)
PREFLIGHT_JSON_DEFINE(NcclConfFacts, files, home_from, names, named_files)
PREFLIGHT_JSON_DEFINE(NetAddress, family, address, prefix)
PREFLIGHT_JSON_DEFINE(NetInterface, name, up, running, loopback, operstate, mtu, speed_mbps, type, addresses,
                      pci_bus_id, rdma_device, driver, driver_version)
PREFLIGHT_JSON_DEFINE(IbPort, port, state, phys_state, rate, link_layer, gids, netdevs)
PREFLIGHT_JSON_DEFINE(IbDevice, name, pci_bus_id, ports)
PREFLIGHT_JSON_DEFINE(MasterFacts, addr, port, resolved, addr_is_local, hostname_resolves_to, port_listening,
                      bind_test, ephemeral_range, reserved_ports)
PREFLIGHT_JSON_DEFINE(ReachResult, attempted, ok, target, source, error, ms)
PREFLIGHT_JSON_DEFINE(NetFacts, interfaces, ib_devices, master, gpudirect_rdma, reach)
PREFLIGHT_JSON_DEFINE(PciFunction, bus_id, kind, vendor_device, class_code, root, chain, numa_node, local_cpus,
                      iommu_group, driver)
PREFLIGHT_JSON_DEFINE(AcsState, bus_id, state, cap, ctrl, config_bytes, detail)
PREFLIGHT_JSON_DEFINE(IommuGroup, group, type, devices)
PREFLIGHT_JSON_DEFINE(IommuFacts, units, cmdline, groups, hypervisor)
PREFLIGHT_JSON_DEFINE(PcieFacts, functions, bridges, iommu)
PREFLIGHT_JSON_DEFINE(MountEntry, mount_point, fstype, source, options, read_only, size_option)
PREFLIGHT_JSON_DEFINE(FsUsage, total_bytes, free_bytes, unlimited, is_tmpfs, fs_magic, st_dev, writable)
PREFLIGHT_JSON_DEFINE(ShmAllocTest, requested_bytes, ok, err, step, error)
PREFLIGHT_JSON_DEFINE(ShmFacts, path, mount, usage, alloc)
PREFLIGHT_JSON_DEFINE(DiskUsage, total_bytes, free_bytes, total_inodes, free_inodes, read_only, writable)
PREFLIGHT_JSON_DEFINE(CheckpointDir, given, defaulted, path, exists, holder, holder_is_dir, resolved, usage, mount)
PREFLIGHT_JSON_DEFINE(DiskFacts, cwd, dirs)
PREFLIGHT_JSON_DEFINE(NumaNode, os_index, cpus, memory_bytes, subtype)
PREFLIGHT_JSON_DEFINE(TopoHop, kind, id)
PREFLIGHT_JSON_DEFINE(PciEndpoint, kind, bus_id, vendor_device, class_id, name, os_devices, rdma_devices, numa_nodes,
                      local_cpus, path)
PREFLIGHT_JSON_DEFINE(TopoLink, a, b, b_kind, bandwidth)
PREFLIGHT_JSON_DEFINE(TopologyFacts, source, this_system, packages, cpus, numa_nodes, gpus, nics, nvlinks, notes)

}  // namespace preflight
