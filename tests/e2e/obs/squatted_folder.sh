#!/usr/bin/env bash
# Another user (dptest2) took /tmp/slurm-dp-<uid of dptest> first: dp-top,
# the --dp-report file and srun's first-failure line still work (the daemon
# also answers on an abstract socket, checked by uid both ways), and the
# daemon says whose the folder is and that an admin must act. dptest2 also
# listens, with a full backlog, on a decoy that copies the step's abstract
# name (anyone can read it): srun's end and dp-top never wait on it. Runs in a
# private mount namespace with its own /tmp, so the squat never touches the
# host's /tmp that other clusters' steps of dptest use. A checkout or build
# tree under /tmp (a CI clone) is bound back in through a descriptor of the
# host's /tmp opened before the new one covers it (--no-canonicalize: mount
# would otherwise resolve the path in the new /tmp).
private_tmp() {
  exec 9</tmp
  mount -t tmpfs -o mode=1777 dp-private-tmp /tmp || return 1
  local p top
  for p in "$0" "$PWD" "${DP_CLUSTER_DIR:-}" "${DP_DAEMON:-}" "${DP_OBS_WORKER:-}" "${DP_TOP:-}"; do
    [[ -n $p ]] && p=$(realpath -m "$p")
    [[ $p == /tmp/?* ]] || continue
    top=${p#/tmp/}
    top=${top%%/*}
    mountpoint -q "/tmp/$top" && continue
    mkdir -p "/tmp/$top" && mount --no-canonicalize --bind "/proc/self/fd/9/$top" "/tmp/$top" || return 1
  done
  exec 9<&-
}
if [[ -z ${DP_PRIVATE_TMP:-} ]]; then
  exec unshare -m --propagation private env DP_PRIVATE_TMP=1 \
    bash -c "$(declare -f private_tmp)"'; private_tmp && exec "$0" "$@"' "$0" "$@"
fi
. "$(dirname "$0")/common.sh"
site

uid=$(id -u dptest)
as_other mkdir -m 0755 "/tmp/slurm-dp-$uid"
[[ $(stat -c %U "/tmp/slurm-dp-$uid") == dptest2 ]] || fail "dptest2 could not take /tmp/slurm-dp-$uid"

victim=1
as_user timeout 120 srun --dp-world=auto --dp-verbose -N2 --ntasks-per-node=1 --kill-on-bad-exit=0 \
  --dp-report=report.json -o "$WORK/rank%t.log" "$DP_OBS_WORKER" 100000 >"$WORK/srun.log" 2>&1 &
srun_pid=$!
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT
for r in 0 1; do wait_log "$WORK/rank$r.log" '^ITER 10$' 60; done
job=$(squeue -h -u dptest -o %i | head -n1)
top_ready() { as_user "$DP_TOP" --once "$job" 2>&1 | grep -qE '^1 +n2 '; }
wait_until 20 "dp-top to show the step with its folder squatted" top_ready

# The decoy: the step's prefix, another tail; a backlog of one, filled.
as_other /usr/bin/python3 - "$uid" "$job" "$WORK" >"$WORK/decoy.log" 2>&1 <<'PY' &
import os, socket, sys, time
prefix = "@slurm-dp-%s/%s." % (sys.argv[1], sys.argv[2])
real = [l.split()[-1] for l in open("/proc/net/unix") if l.split()[-1].startswith(prefix)]
name = real[0].rsplit(".", 1)[0] + ".decoy"
s = socket.socket(socket.AF_UNIX)
s.bind("\0" + name[1:])
s.listen(0)
held = []
try:
    while True:
        c = socket.socket(socket.AF_UNIX)
        c.setblocking(False)
        held.append(c)
        c.connect("\0" + name[1:])
except BlockingIOError:
    print("DECOY", name, flush=True)
end = time.time() + 300  # or when the test's folder goes
while os.path.isdir(sys.argv[3]) and time.time() < end:
    time.sleep(0.2)
PY
wait_log "$WORK/decoy.log" '^DECOY ' 20
t_top=$SECONDS
wait_until 20 "dp-top to show the step beside dptest2's decoy" top_ready
((SECONDS - t_top <= 5)) || fail "dp-top took $((SECONDS - t_top)) s beside the decoy"

pid=$(sed -n "s/^START pid \([0-9]*\) rank $victim\$/\1/p" "$WORK/rank$victim.log")
[[ -n $pid ]] || fail "rank $victim did not say its pid"
kill -9 "$pid"
t_end=$SECONDS
wait "$srun_pid" || true
((SECONDS - t_end <= 30)) || fail "srun ended $((SECONDS - t_end)) s after the failure (the decoy held it?)"
cat "$WORK/srun.log"
grep -q "/tmp/slurm-dp-$uid belongs to dptest2 (uid $(id -u dptest2)), not to you: an admin (root) must remove it" \
  "$WORK/srun.log" || fail "the daemon did not say whose the folder is and who must act"
# --dp-verbose: the daemon's own exit line may come after srun's.
last=$(grep -v -e '^\s*$' -e '^dp-rendezvousd: ' "$WORK/srun.log" | tail -n1)
[[ $last == "slurm-dp: step "*" failed: first failure: rank $victim (host n2) was killed by signal 9"* ]] ||
  fail "srun's last line does not name rank $victim: $last"
grep -q '"failure":{"rank":1,"host":"n2","how":"rank_lost","verdict":"task_exit","signal":9' "$WORK/report.json" ||
  fail "the report file does not name rank 1: $(cat "$WORK/report.json" 2>&1)"
pass "with /tmp/slurm-dp-$uid taken by dptest2 and a decoy with a full backlog on the step's name: dp-top, the report and the first-failure line work, srun ended $((SECONDS - t_end)) s after the failure"
