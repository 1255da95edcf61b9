#!/usr/bin/env bash
# The base image the other container tests build on (CTest fixture container_base): Debian 12 by
# debootstrap --variant=minbase from this machine's Debian mirror, imported into the tests' own
# store once per build folder; and a container of it runs (podman run with runc, lib.sh says why).
source "$(dirname "$0")/lib.sh"
start=$(date +%s)
if container_base; then pass "$base_image is there ($(($(date +%s) - start)) s)"; else fail "$base_image could not be made"; finish; fi
expect_rc 0 "podman run of $base_image" -- container_run "$base_image" sh -c 'cat /etc/debian_version; df -k /dev/shm | tail -n1'
expect_contains "$(head -n1 "$work/out")" "12." "/etc/debian_version in the container"
# The runtime's default /dev/shm, the one a pod gets without a memory volume: 64 MiB or just under
# (podman 4.3: 64000 KiB; Docker and containerd: 65536 KiB).
shm_kib=$(awk 'NR==2 {print $2}' "$work/out")
if [ "${shm_kib:-0}" -gt 0 ] && [ "$shm_kib" -le 65536 ]; then pass "the container's default /dev/shm: $shm_kib KiB"
else fail "the container's default /dev/shm: '$shm_kib' KiB, want at most 64 MiB"; fi
finish
