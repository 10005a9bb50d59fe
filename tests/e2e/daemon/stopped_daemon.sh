#!/usr/bin/env bash
# Both directions are watched. With the step's daemon stopped (SIGSTOP, as a
# frozen srun host would be) and one rank killed with kill -9, every other
# rank, blocked on the daemon, exits within 10 s naming the failure: its
# node's agent hears nothing for the site's bound (heartbeat_timeout, 5 s
# here; its reconnects find no answer) and aborts its ranks naming the silent
# daemon (without agents each rank's own client watched it).
. "$(dirname "$0")/../lib.sh"
site heartbeat_timeout=5

victim=3
. "$(dirname "$0")/hold_ranks.sh"
daemon_pid=$(daemons_of_job "$job" | head -1)
[[ -n $victim_pid && -n $daemon_pid ]] || fail "no pid for rank $victim ($victim_pid) or the daemon ($daemon_pid)"
kill -STOP "$daemon_pid"
trap 'kill -CONT "$daemon_pid" 2>/dev/null || true; cleanup_work' EXIT
killed_at=$(date +%s%3N)
kill -9 "$victim_pid"

for t in 0 1 2; do
  until grep -q "aborted at" "$WORK/task.$t.out" 2>/dev/null; do
    (($(date +%s%3N) - killed_at < 10000)) || fail "rank $t still blocked 10 s after the kill: $(cat "$WORK/task.$t.out")"
    sleep 0.05
  done
  line=$(grep "aborted at" "$WORK/task.$t.out")
  grep -q "node n[0-9]* lost the step's daemon (dp-rendezvousd): dp-rendezvousd at .* sent nothing for" <<<"$line" ||
    fail "rank $t does not name the silent daemon: $line"
  at=$(sed -n 's/.*aborted at \([0-9]*\):.*/\1/p' <<<"$line")
  echo "rank $t failed $((at - killed_at)) ms after the kill: $line"
done
kill -CONT "$daemon_pid"
rc=0
wait "$srun_pid" || rc=$?
((rc != 0)) || fail "srun exited 0"
[[ -z $job ]] || wait_until 30 "job $job to end" job_done "$job"
[[ -z $job ]] || wait_until 10 "no daemon of job $job" no_daemon "$job"
pass "with the daemon stopped and rank $victim killed, ranks 0-2 exited within 10 s naming the silent daemon"
