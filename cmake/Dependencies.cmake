# Every dependency in one place, each with the Debian package that provides it.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)          # nlohmann-json3-dev
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)  # libboost-program-options-dev
find_package(LibXml2 REQUIRED)                     # libxml2-dev: JUnit output
find_package(PkgConfig REQUIRED)                   # pkg-config
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)  # libhwloc-dev: the topology probe
find_package(MPI REQUIRED COMPONENTS C)             # libopenmpi-dev: the distributed run (dist/mpi_transport.cpp)
