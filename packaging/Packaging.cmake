# Install layout and the Debian package (CPack), included at the end of the top-level CMakeLists.txt.
#
#   bin/preflight                                   the binary
#   libexec/preflight/preflight-gpu-probe           the contained GPU helper (helper_path() looks
#                                                   next to the binary, then in ../libexec/preflight)
#   share/preflight/preflight-v1.schema.json        the JSON Schema of --format json
#   share/preflight/junit.xsd                       the JUnit XML schema of --format junit
#   share/preflight/matrix/*.tsv, README.md         the compatibility data (--matrix /usr/share/preflight/matrix)
#   share/man/man1/preflight.1.gz                   the manual page (plain preflight.1 without gzip)
#   share/bash-completion/completions/preflight     bash completion
#
#   cmake --build BUILD --target package            BUILD/preflight_<version>_<arch>.deb
#   cpack -G DEB -B DIR --config BUILD/CPackConfig.cmake   the same, written to DIR
include(GNUInstallDirs)

install(TARGETS preflight RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS preflight-gpu-probe RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/preflight)
install(FILES schema/preflight-v1.schema.json schema/junit.xsd DESTINATION ${CMAKE_INSTALL_DATADIR}/preflight)

file(GLOB PREFLIGHT_MATRIX_DATA CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/matrix/*.tsv)
install(FILES ${PREFLIGHT_MATRIX_DATA} ${PROJECT_SOURCE_DIR}/matrix/README.md
  DESTINATION ${CMAKE_INSTALL_DATADIR}/preflight/matrix)

# The manual page, compressed where gzip exists (Debian's convention), plain otherwise. Compressed at
# configure time (an edit of preflight.1 reruns it), so that cpack alone finds it after any build.
set(PREFLIGHT_MAN_SOURCE ${PROJECT_SOURCE_DIR}/packaging/preflight.1)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PREFLIGHT_MAN_SOURCE})
find_program(PREFLIGHT_GZIP gzip)
set(PREFLIGHT_MAN_PAGE ${PREFLIGHT_MAN_SOURCE})
if(PREFLIGHT_GZIP)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/packaging)
  execute_process(COMMAND ${PREFLIGHT_GZIP} -9 -n -c ${PREFLIGHT_MAN_SOURCE}
    OUTPUT_FILE ${CMAKE_BINARY_DIR}/packaging/preflight.1.gz RESULT_VARIABLE PREFLIGHT_GZIP_RESULT)
  if(PREFLIGHT_GZIP_RESULT EQUAL 0)
    set(PREFLIGHT_MAN_PAGE ${CMAKE_BINARY_DIR}/packaging/preflight.1.gz)
  endif()
endif()
install(FILES ${PREFLIGHT_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/preflight.bash-completion
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME preflight)

# ---- CPack: a .deb ------------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME preflight)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "preflight")
set(CPACK_PACKAGE_CONTACT "preflight maintainers <preflight@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "pre-flight environment validator for distributed GPU training")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # debug info stays in the build tree (RelWithDebInfo: ~140 MB unstripped)

set(CPACK_DEBIAN_PACKAGE_NAME preflight)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # preflight_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.org/preflight")
# The shared libraries the binaries link (hwloc, Open MPI, Boost.Program_options, libxml2, libstdc++)
# become Depends through dpkg-shlibdeps. The NVIDIA libraries are dlopen()ed at run time, never linked,
# so the package installs and runs on machines without a driver (the image profile).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# lstopo exports for --topology-xml, mpirun for the job profile, srun for Slurm jobs.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "hwloc, openmpi-bin")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurm-client, bash-completion, python3")
# The extended description (CPack puts CPACK_PACKAGE_DESCRIPTION_SUMMARY on the first line).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"preflight is started the way the training job will be started (alone on a node,
under mpirun or srun) and probes the machine and the environment the job will
run in: NVIDIA driver, CUDA runtimes, NCCL, /dev/shm, host memory, NUMA binding,
network interfaces, RDMA, PCIe topology, launcher variables. Rank 0 gathers every
rank's facts and prints one verdict per check (PASS, WARN, FAIL, SKIP, UNKNOWN)
with the evidence and the fix. Its exit status gates job submissions, Slurm
prologs, Kubernetes init containers and container image builds. Reports as
text, JSON, JUnit XML and Prometheus textfile.")

include(CPack)
