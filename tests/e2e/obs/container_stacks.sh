#!/usr/bin/env bash
# A rank in a container of its own (issue 62): 2 ranks of a plain Python
# program each run in a user and mount namespace of their own, chrooted into
# Debian 11's root (its Python 3.9, as pyxis/enroot or apptainer run a rank:
# its interpreter and script exist only in its own root, seen from the host
# through /proc/PID/root), asleep in a known function. dp-top --stacks, run
# by the step's owner on the host, shows both ranks' Python frames read by
# the node agent from outside, the call they wait in named from the script as
# the container sees it, and Python 3.9's way of sleeping (select).
# Skipped (77) where Debian 11's root is not built (scripts/debian-root
# debian11 ensure), or is being built.
. "$(dirname "$0")/../lib.sh"
: "${DP_TOP:?set DP_TOP to the built dp-top}"
root=${DP_DEBIAN_ROOTS:-/var/cache/slurm-dp}/debian11
[[ -x $root/usr/bin/python3 ]] || { echo "SKIP: no Debian 11 root in $root (scripts/debian-root debian11 ensure)"; exit 77; }
exec 8>>"$root.lock"
flock -n -s 8 || { echo "SKIP: $root is being built by scripts/debian-root"; exit 77; }
site
cat >"$WORK/rank.py" <<'PY'
import os, sys, time

def wait_for_peers(out):
    with open(os.path.join(out, "ready." + os.environ["RANK"]), "w") as f:
        f.write("%d\n" % os.getpid())
    time.sleep(600)

wait_for_peers(sys.argv[1])
PY
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT
# The rank's namespace: its root is Debian 11's, this test's folder bound at /mnt.
as_user timeout 200 srun -w n1 -N1 -n2 --dp-world=auto -J container \
  unshare --user --map-root-user --mount sh -c \
  'mount --bind "$1" "$2/mnt" && exec /usr/sbin/chroot "$2" /usr/bin/python3 /mnt/rank.py /mnt' rank "$WORK" "$root" \
  >"$WORK/srun.log" 2>&1 &
srun_pid=$!
wait_until 60 "both ranks to start in their containers" test -s "$WORK/ready.0" -a -s "$WORK/ready.1"
job=$(squeue -h -u "$DP_TEST_USER" -n container -o %i | head -n1)
[[ -n $job ]] || fail "no job of $DP_TEST_USER's named container"
for r in 0 1; do
  pid=$(cat "$WORK/ready.$r")
  [[ $(readlink "/proc/$pid/root") != / ]] || fail "rank $r (pid $pid) runs in the host's root"
done
stacks=$(as_user "$DP_TOP" --stacks "$job.0" 2>&1) || fail "dp-top --stacks failed: $stacks"
echo "$stacks"
expect_contains "$stacks" "ranks 0-1: [select] <- time.sleep <- wait_for_peers rank.py:6 <- <module> rank.py:8" \
  "both ranks' Python 3.9 frames, read from the host through their own root"
[[ $stacks != *"no Python frames"* ]] || fail "a rank shows no Python frames: $stacks"
scancel "$job"
wait "$srun_pid" || true
srun_pid=
pass "2 ranks in containers of their own (Debian 11's root, Python 3.9) shown by dp-top --stacks with their frames and calls"
