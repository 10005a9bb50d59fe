#!/usr/bin/env bash
# A 2x2 step with --dp-verbose ends with one start-up timing line that has
# every phase, each per-rank phase with its slowest rank and host.
. "$(dirname "$0")/common.sh"
# MASTER_PORT from the site's range: the master node publishes it through the daemon.
site resv_ports=ignore

out=$(as_user timeout 120 srun --dp-world=auto --dp-verbose -N2 --ntasks-per-node=2 \
  "$DP_OBS_WORKER" 20 2>&1) || fail "srun failed: $out"
line=$(grep 'slurm-dp: step [0-9]*\.[0-9]* start-up: ' <<<"$out") || fail "no start-up line: $out"
[[ $(wc -l <<<"$line") -eq 1 ]] || fail "more than one start-up line: $line"
echo "$line"
# srun's own phases, then the step's.
for phase in 'check' 'layout' 'daemon up' 'ready'; do
  grep -qE "srun: .*\b$phase [0-9.]+ms" <<<"$line" || fail "srun phase '$phase' has no time: $line"
done
for phase in 'launch\+hello' connect 'barrier\(mesh\)' comm_ready first_collective; do
  grep -qE "$phase \+?[0-9.]+ms \(slowest rank [0-3] on n[12]\)" <<<"$line" \
    || fail "phase $phase has no time with its slowest rank and host: $line"
done
grep -qE 'master_port \+[0-9.]+ms' <<<"$line" || fail "master_port has no time: $line"
grep -qE 'id_exchange \+[0-9.]+ms' <<<"$line" || fail "id_exchange has no time: $line"
pass "every phase timed: ${line#*start-up: }"
