#!/usr/bin/env bash
# Nobody who can reach the daemon keeps the step's ranks out. The daemon
# listens only on srun's route address (in ns mode the host's bridge address:
# nothing answers on 127.0.0.1); with 2 000 connections that never say hello
# held open against it by another user's process (reopened as the daemon
# evicts them), a 2x2 step still starts and every collective is exact.
. "$(dirname "$0")/../runtime/common.sh"
site

as_user timeout 180 srun --dp-world=auto -N2 --ntasks-per-node=2 \
  --export=ALL,DP_BACKEND=gloo,DP_TIMEOUT_MS=60000 bash -c \
  'until [ -e "$0/go" ]; do sleep 0.05; done; exec "$1" collectives' "$WORK" "$DP_COMM_WORKER" \
  >"$WORK/srun.log" 2>&1 &
srun_pid=$!
squat_pid=""
# On any failure, end what this test started (by pid): the step and the squatter.
trap 'kill "$srun_pid" $squat_pid 2>/dev/null || true; cleanup_work' EXIT
job=""
find_job() { job=$(squeue -h -u dptest -o %i | head -1); [[ -n $job ]] && has_daemon "$job"; }
wait_until 60 "the step's daemon" find_job
daemon_pid=$(daemons_of_job "$job" | head -1)
listening() { ss -Hltnp | grep -q "pid=$daemon_pid,"; }
wait_until 10 "the daemon to listen" listening
local_addr=$(ss -Hltnp | grep "pid=$daemon_pid," | awk '{print $4}' | head -1)
port=${local_addr##*:}
addr=${local_addr%:*}
addr=${addr#[}
addr=${addr%]}
echo "daemon $daemon_pid of job $job listens on $addr port $port"
[[ $addr != 0.0.0.0 && $addr != '*' && $addr != '::' ]] || fail "the daemon listens on every address ($local_addr)"
if [[ $(mode) == ns ]]; then
  [[ $addr != 127.* ]] || fail "ns mode: the daemon should listen on the route address, not $addr"
  if timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
    fail "the daemon answers on 127.0.0.1:$port, not only on its route address $addr"
  fi
fi

# Another user's process: 2 000 connections, none says hello; every one the
# daemon closes is opened again.
cat >"$WORK/squat.py" <<'PY'
import socket, sys, selectors, time
addr, port, want, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sel = selectors.DefaultSelector()
def one():
    s = socket.create_connection((addr, port), timeout=5)
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
opened = 0
for _ in range(want):
    one(); opened += 1
open(ready, "w").write("%d\n" % opened)
while True:
    for key, _ in sel.select(timeout=1):
        s = key.fileobj
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:
            sel.unregister(s); s.close()
            try:
                one(); opened += 1
            except OSError:
                time.sleep(0.01)
PY
(ulimit -n 8192 && exec setpriv --reuid=65534 --regid=65534 --clear-groups \
  /usr/bin/python3 "$WORK/squat.py" "$addr" "$port" 2000 "$WORK/squatting") >"$WORK/squat.log" 2>&1 &
squat_pid=$!
squatting() { test -s "$WORK/squatting" || { kill -0 "$squat_pid" || fail "the squatter failed: $(cat "$WORK/squat.log")"; false; }; }
wait_until 60 "2 000 connections opened" squatting
echo "squatter holds $(cat "$WORK/squatting") connections"

touch "$WORK/go"
rc=0
wait "$srun_pid" || rc=$?
kill -0 "$squat_pid" 2>/dev/null || fail "the squatter died early: $(cat "$WORK/squat.log")"
cat "$WORK/srun.log"
((rc == 0)) || fail "the step failed while 2 000 connections squatted its daemon"
for r in 0 1 2 3; do
  grep -q "^OK rank $r of 4 " "$WORK/srun.log" || fail "rank $r did not finish"
done
pass "2x2 step trained with 2 000 squatting connections; daemon on $addr only ($(mode) mode)"
