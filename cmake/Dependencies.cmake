# Every dependency in one place, each with the Debian package that provides it.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)          # nlohmann-json3-dev
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)  # libboost-program-options-dev
find_package(LibXml2 REQUIRED)                     # libxml2-dev: JUnit output
find_package(PkgConfig REQUIRED)                   # pkg-config
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)  # libhwloc-dev: the topology probe
find_package(MPI REQUIRED COMPONENTS C)             # libopenmpi-dev: the distributed run (transport/mpi_transport.cpp)
# libpmix-dev (pulled in by libopenmpi-dev): the join before MPI_Init (transport/pmix_join.cpp). Optional:
# without it MPI_Init runs under its watchdog alone. Turn it off when the MPI library carries a PMIx
# of its own rather than the system's (two PMIx clients in one process do not mix).
option(PREFLIGHT_PMIX "Join the ranks through PMIx before MPI_Init when pkg-config finds pmix" ON)
if(PREFLIGHT_PMIX)
  pkg_check_modules(PMIX IMPORTED_TARGET pmix)
endif()
# libsimdjson-dev: the fast reader of `preflight merge`'s result files (core/fast_json.cpp). Optional:
# without it merge reads every file through nlohmann::json, with the same results, a few times slower.
option(PREFLIGHT_SIMDJSON "Read merge's result files with simdjson when it is found" ON)
if(PREFLIGHT_SIMDJSON)
  find_package(simdjson 3 CONFIG QUIET)
endif()
