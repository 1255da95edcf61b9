// The irreducible work of a distributed preflight run, and nothing else: MPI start-up, the hwloc
// topology load with the important I/O devices kept (the same settings as probes/topology_probe.cpp),
// one all_reduce and one barrier, MPI shutdown. bench/time_to_verdict.sh times preflight against it
// (the target: a run finishes within 1.5x of this, README.md#performance). Exit 0 when every step
// worked, 1 otherwise.
#include <hwloc.h>
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    std::fprintf(stderr, "irreducible: MPI_Init failed\n");
    return 1;
  }
  int rank = -1;
  int size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int ok = 1;
  int objects = 0;
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) {
    ok = 0;
  } else {
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
    if (hwloc_topology_load(topo) != 0) {
      ok = 0;
    } else {
      objects = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PCI_DEVICE) + hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    }
    hwloc_topology_destroy(topo);
  }

  int all_ok = 0;
  if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) all_ok = 0;
  if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) all_ok = 0;
  if (rank == 0)
    std::printf("irreducible: %d rank(s), topology %s (%d PU+PCI objects on rank 0)\n", size,
                all_ok != 0 ? "loaded everywhere" : "FAILED on some rank", objects);
  MPI_Finalize();
  return all_ok != 0 ? 0 : 1;
}
