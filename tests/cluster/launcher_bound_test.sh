#!/usr/bin/env bash
# examples/mpirun.sh across emulated hosts (tests/cluster/lib.sh) when a host's network is cut in
# each phase after MPI initialisation (probe, gather, barrier, allreduce): mpirun then waits for the
# daemon of a host it cannot reach, and the example's bound (timeout -k 10, preflight's --timeout T
# + LAUNCHER_GRACE) must end it. T 10 and LAUNCHER_GRACE 5 (the examples' default is 30) keep the
# four runs near 90 s. Each run: the example back within T + 5 + 10 s (+3 s for a loaded machine),
# with an exit status the README documents (preflight's 4, mpirun's 205, timeout's 124 or 137),
# rank 0's JSON report written, no training started. (A cut during MPI initialisation is not here:
# preflight-faults does not stop a rank in the init phase.) The moment of the cut is made certain
# with the test build (preflight-faults): rank 2, on node2, stops itself right after it announced
# the phase, the link is cut, and it goes on. Needs root. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/lib.sh"
cluster_require
trap 'cluster_down; rm -rf "$work"' EXIT
py=${PYTHON3:-python3}

cluster_host node1
cluster_host node2
cluster_up || { echo "FAIL: the emulated cluster did not come up"; exit 1; }

# The launcher the example runs: cluster_mpirun's mpirun, without its own outer timeout.
cat >"$work/mpirun" <<W
#!/usr/bin/env bash
# mpirun from the emulated cluster's launcher namespace (tests/cluster/lib.sh's cluster_mpirun)
CLUSTER_DIR="$cluster_dir" exec ip netns exec "$cluster_launcher" mpirun --allow-run-as-root --oversubscribe \\
  --mca plm_rsh_agent "$here_cluster/rsh_agent.sh" --mca oob_tcp_if_include "$cluster_net.0/24" \\
  --mca btl_tcp_if_include "$cluster_net.0/24" --mca btl self,vader,tcp --mca pml ob1 "\$@"
W
chmod +x "$work/mpirun"
t=10 grace=5
bound=$((t + grace + 10))

for phase in probe gather barrier allreduce; do
  rm -f "$work/report.json" "$work/trained"
  t0=$(now)
  MPIRUN=$work/mpirun NP=4 MPIRUN_ARGS="--host node1:2,node2:2 -x PREFLIGHT_TEST_STOP=2:$phase" \
    PREFLIGHT=$PREFLIGHT_FAULTS PREFLIGHT_ARGS="--only launch.ranks,net.reachability,shm.capacity,comm.* --timeout $t" \
    LAUNCHER_GRACE=$grace PREFLIGHT_JSON=$work/report.json timeout 120 "$PREFLIGHT_SOURCE_DIR/examples/mpirun.sh" \
    touch "$work/trained" >"$work/out" 2>"$work/err" &
  example=$!
  pid=""
  for i in $(seq 300); do
    for p in $(host_pids node2); do
      [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = T ] && pid=$p
    done
    [ -n "$pid" ] && break
    sleep 0.05
  done
  if [ -z "$pid" ]; then fail "$phase: rank 2 never stopped on node2"; else
    ip -n "$cluster_launcher" link set v2 down
    kill -CONT "$pid"
  fi
  rc=0
  wait "$example" || rc=$?
  took=$(secs "$t0" "$(now)")
  ip -n "$cluster_launcher" link set v2 up
  host_reset node1
  host_reset node2
  if within "$took" "$bound + 3"; then pass "$phase: the example returned after $took s (bound $((t + grace)) s + 10 s of -k)"; else
    fail "$phase: the example returned after $took s, bound $((t + grace)) s + 10 s"; fi
  case $rc in 4 | 124 | 137 | 205) pass "$phase: exit $rc (documented)" ;;
    *) fail "$phase: exit $rc, not one the README documents for a lost host"; sed 's/^/  | /' "$work/err" | tail -5 >&2 ;; esac
  [ -f "$work/trained" ] && fail "$phase: the training started" || pass "$phase: no training"
  code=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['exit_code'])" "$work/report.json" 2>&1)
  expect_eq "$code" 4 "$phase: rank 0's JSON report (summary.exit_code)"
done

finish
