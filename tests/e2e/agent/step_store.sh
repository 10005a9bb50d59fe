#!/usr/bin/env bash
# --dp-store=step with unmodified PyTorch programs (issue 33): every rank a
# client of its node's agent store, no rank listening on MASTER_PORT.
#  1. DDP (gloo, env://) on 2 nodes x 2 tasks ends with bit-for-bit the same
#     parameters as with rank 0's TCPStore (--dp-store=rank0).
#  2. While it runs: each task's MASTER_ADDR:MASTER_PORT is 127.0.0.1 and a
#     port its node's dp-nodeagent listens on (no python process does), with
#     TORCHELASTIC_USE_AGENT_STORE=True; another user's TCPStore client on that
#     port cannot read a key, and dp-top counts it (store_strangers_refused).
#     The --dp-report file says so: "srun":{...,"store":"step"}.
#  3. --dp-on-failure=keep, rank 0 killed after it published a key: rank 1 on
#     the other node still reads it through the store; with --dp-store=rank0
#     (the control) the key died with rank 0. Rank 1's wait for a key rank 0
#     never set times out, and srun's output names the key and rank 0's end.
# Debian 13's torch 2.6 needs the test-only no_libuv shim (pytorch_launcher_env):
# its TCPStore refuses to be even a client without libuv unless told so, and
# env:// gives its agent-store client no way to be told.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
ddp_site kill_grace=2

# 1. The control: rank 0's TCPStore.
start_ddp rank0 --steps 30
t0=$(date +%s%N)
expect_srun_ok 120 "the DDP step with rank 0's store"
rank0_params=$(same_params rank0) || exit 1

# 2. The step's store, held running until the checks are done.
ddp_srun_flags=(--dp-store=step --dp-report="$WORK/store.json")
rm -f "$WORK"/ready.* "$WORK"/rank*.log
start_ddp step --steps 30 --wait-file "$WORK/stop"
wait_ranks_ready 120
task_var() { tr '\0' '\n' <"/proc/$1/environ" | sed -n "s/^$2=//p"; }
for r in 0 1 2 3; do
  pid=$(rank_pid "$r") || fail "no process of rank $r"
  addr=$(task_var "$pid" MASTER_ADDR) port=$(task_var "$pid" MASTER_PORT)
  expect_eq "$addr" 127.0.0.1 "rank $r's MASTER_ADDR"
  expect_eq "$(task_var "$pid" TORCHELASTIC_USE_AGENT_STORE)" True "rank $r's TORCHELASTIC_USE_AGENT_STORE"
  listener=$(nsenter --net="/proc/$pid/ns/net" ss -H -ltnp "sport = :$port")
  expect_contains "$listener" '"dp-nodeagent"' "the listener on rank $r's MASTER_PORT $port"
  [[ $listener != *python* ]] || fail "a python process listens on MASTER_PORT $port: $listener"
done
# Another user of rank 0's node, with PyTorch's own client, on its store port.
pid=$(rank_pid 0) && port=$(task_var "$pid" MASTER_PORT)
stranger=$(nsenter --net="/proc/$pid/ns/net" runuser -u dptest2 -- env "${pet[@]}" /usr/bin/python3 - "$port" 2>&1 <<'PY'
import datetime, sys
import torch.distributed as dist
try:
    s = dist.TCPStore("127.0.0.1", int(sys.argv[1]), None, False, datetime.timedelta(seconds=5))
    print("read", s.get("/worker/attempt_0/default_pg/0//cpu//0"))
except Exception as e:  # noqa: BLE001
    print("refused:", type(e).__name__)
PY
)
[[ $stranger == *refused* ]] || fail "another user read from the step's store: $stranger"
# ... and is counted: dp-top shows it within a heartbeat or two.
top=""
strangers_counted() {
  top=$(as_user "${DP_TOP:?set DP_TOP to the built dp-top}" --once "$job.0" 2>&1) &&
    [[ $top =~ store_strangers_refused\ [1-9] ]]
}
wait_until 10 "dp-top to count the stranger's connection to the store ($top)" strangers_counted
touch "$WORK/stop"
t0=$(date +%s%N)
expect_srun_ok 120 "the DDP step with the step's store"
grep -q '"srun":{[^}]*"store":"step"}' "$WORK/store.json" ||
  fail "the step report does not say the step's store: $(head -c 300 "$WORK/store.json")"
step_params=$(same_params step) || exit 1
expect_eq "${step_params##* }" "${rank0_params##* }" "the parameters with the step's store and with rank 0's"

# 3. Rank 0 dies after publishing; the survivor reads on.
cp "$(dirname "$0")/../pytorch/store_keep.py" "$WORK/"
keep_run() {  # keep_run STORE [--wait-unset]: rank 1's output
  local name=keep-$1-$$
  rm -f "$WORK/kready" "$WORK/kdead" "$WORK"/keep*.log
  as_user env "${pet[@]}" srun --dp-world=auto --dp-store="$1" --dp-on-failure=keep -N2 \
    --ntasks-per-node=1 -J "$name" -o "$WORK/keep%t.log" /usr/bin/python3 "$WORK/store_keep.py" \
    "$WORK/kready" "$WORK/kdead" ${2:+"$2"} >"$WORK/srun.log" 2>&1 &
  srun_pid=$!
  find_job "$name"
  wait_until 60 "rank 0 published ($(cat "$WORK"/keep*.log "$WORK/srun.log" 2>/dev/null | tail -3))" test -f "$WORK/kready"
  victim=$(rank_pid 0) || fail "no process of rank 0"
  kill -9 "$victim"
  wait_until 10 "rank 0 ($victim) gone" bash -c "! kill -0 $victim 2>/dev/null"
  touch "$WORK/kdead"
  wait_srun 60
  ((ms >= 0)) || fail "srun still runs 60 s after rank 0 died (--dp-on-failure=keep)"
  cat "$WORK/keep1.log"
}
t0=$(date +%s%N)
survivor=$(keep_run step --wait-unset)
expect_contains "$survivor" "rank 1 read: written before rank 0 died" "rank 1 with the step's store"
# PyTorch's timeout names no key; the daemon names it, and the failure.
expect_contains "$survivor" "rank 1 gave up a wait" "rank 1's wait for a key rank 0 never set"
named=$(grep -F "never_set_by_rank0', never set" "$WORK/srun.log" || true)
expect_contains "$named" "slurm-dp: step " "srun's line naming the key ($(cat "$WORK/srun.log"))"
expect_contains "$named" "PyTorch's store: the clients on host" "srun's line"
expect_contains "$named" "first failure: rank 0" "srun's line names rank 0's end"
echo "$named"  # for the docs' corpus of lines (lib.sh record_lines)
if in_lane; then
  lane_skips "the control of part 3 (rank 0's store, PyTorch's own server, loses the key)"
else
  control=$(keep_run rank0)
  expect_contains "$control" "could not read" "rank 1 with rank 0's store (the control)"
fi
pass "DDP through the step's store: the parameters of rank 0's store ($step_params), every MASTER_PORT the node agent's, a stranger refused; rank 0's key outlives rank 0 (with rank 0's store it does not)"
