#!/usr/bin/env python3
"""Runs a command with every environment variable preflight reads set to garbage of one kind.

usage: garbage_env.py KIND COMMAND...   (KIND: random | huge | negative | utf8 | empty)

The environment is built from scratch (PATH and the sanitizer/Open MPI settings of the caller are
kept, see tests/integration/lib.sh's keep_env), so nothing of the caller's launcher leaks in. Values
are deterministic (a fixed seed) so a failure can be reproduced; random bytes never contain NUL (an
environment string cannot).
"""
import os
import random
import sys

# Every variable preflight reads (grep the sources for env.get / getenv), plus the families it
# scans by prefix (NCCL_*, TORCH_NCCL_*, SLURM_*, OMPI_*, PMI*) and what terminals set.
NAMES = """
NCCL_BUFFSIZE NCCL_COMM_ID NCCL_CONF_FILE NCCL_CUMEM_HOST_ENABLE NCCL_IB_DISABLE NCCL_IB_HCA
NCCL_P2P_DISABLE NCCL_P2P_LEVEL NCCL_SHM_DISABLE NCCL_SOCKET_FAMILY NCCL_SOCKET_IFNAME NCCL_DEBUG
NCCL_ALGO NCCL_PROTO NCCL_NET_GDR_LEVEL NCCL_TIMEOUT NCCL_NTHREADS NCCL_SOCKET_IFNAM NCCL_
TORCH_NCCL_ASYNC_ERROR_HANDLING TORCH_NCCL_BLOCKING_WAIT TORCH_DISTRIBUTED_DEBUG GLOO_SOCKET_IFNAME
CUDA_VISIBLE_DEVICES CUDA_HOME CUDA_PATH CUDA_VERSION NV_CUDA_CUDART_VERSION NVIDIA_REQUIRE_CUDA
NVIDIA_DISABLE_REQUIRE CUDA_LAUNCH_BLOCKING
RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE ROLE_RANK ROLE_WORLD_SIZE
NODE_RANK TORCHELASTIC_RUN_ID TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS
MASTER_ADDR MASTER_PORT
OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE
PMI_RANK PMI_SIZE PMIX_RANK PMIX_NAMESPACE MPI_LOCALNRANKS MPI_LOCALRANKID
MV2_COMM_WORLD_RANK MV2_COMM_WORLD_SIZE MV2_COMM_WORLD_LOCAL_RANK MV2_COMM_WORLD_LOCAL_SIZE
SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURM_NTASKS SLURM_NPROCS
SLURM_NNODES SLURM_JOB_NUM_NODES SLURM_STEP_NUM_NODES SLURM_STEP_NUM_TASKS SLURM_TASKS_PER_NODE
SLURM_STEP_TASKS_PER_NODE SLURM_NTASKS_PER_NODE
CONDA_PREFIX VIRTUAL_ENV HOME LD_LIBRARY_PATH PREFLIGHT_HELPER_DIR
NO_COLOR TERM COLUMNS LANG LC_ALL
""".split()

KEEP = ("PATH", "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS",
        "OMPI_MCA_mca_base_component_disable_dlclose", "PMIX_MCA_mca_base_component_disable_dlclose")


def value(kind, rng, i):
    if kind == "random":
        return bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 200)))
    if kind == "huge":
        # numbers far past 64 bits, and long strings (the whole environment stays < 1 MiB)
        return (b"9" * 4096) if i % 2 == 0 else (b"eth0," * 800)
    if kind == "negative":
        return [b"-1", b"-2147483649", b"-9223372036854775809", b"-0", b"-", b"--5"][i % 6]
    if kind == "utf8":
        return [b"\xff\xfe", b"\xc3\x28", b"eth\xe2\x82", b"\xed\xa0\x80x", b"0\xf0\x28\x8c\xbc",
                b"\x1b[31m\xc0\xaf"][i % 6]
    if kind == "empty":
        return b""
    raise SystemExit("unknown kind " + kind)


def main():
    kind, cmd = sys.argv[1], sys.argv[2:]
    rng = random.Random(20260101)
    env = {k.encode(): os.environb[k.encode()] for k in KEEP if k.encode() in os.environb}
    for i, name in enumerate(NAMES):
        if kind == "random" and name == "LD_LIBRARY_PATH":
            continue  # a random LD_LIBRARY_PATH can name a real directory; it is not preflight's input
        env[name.encode()] = value(kind, rng, i)
    os.execvpe(cmd[0], cmd, env)


if __name__ == "__main__":
    main()
