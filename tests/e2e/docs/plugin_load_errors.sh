#!/usr/bin/env bash
# packaging/admin/troubleshooting.md's rows, as this lane's Slurm writes
# them: what an admin meets when the plugin line cannot be loaded, and where
# each message lands.
#  1. srun's host (a login node): the plugin line names a .so that is not
#     there, or one built for another Slurm series (a plugin left behind by an
#     in-place Slurm upgrade): srun, sbatch and salloc fail before anything
#     runs, with Slurm's messages on their stderr.
#  2. a node (srun's host fine): the step fails to launch, srun names the
#     failed launch, the node's slurmd log has Slurm's messages, and a batch
#     job there drains the node ("batch job complete failure"; the job itself
#     ends on 22.05, goes back to the queue held on later series).
#  3. srun's host without the plugin: --dp-world is an unrecognized option;
#     and where the nodes still make every step a slurm-dp step (default=on),
#     each task fails with a slurm-dp: line naming the missing plugin line.
# srun's host is played by a copy of the cluster's slurm.conf whose
# PlugStackConfig is a file of this test's; the nodes' plugstack gets a
# second snippet for case 2 only, taken back at exit, the drained node resumed.
. "$(dirname "$0")/../lib.sh"
ETC=$DP_CLUSTER_DIR/etc
broken=$ETC/plugstack.conf.d/zz-docs-broken.conf
# shellcheck disable=SC2317  # the EXIT trap
restore() {
  rm -f "$broken"
  for n in n1 n2; do
    [[ $(sinfo -h -n "$n" -o %T) != drain* ]] || scontrol update nodename="$n" state=resume || true
  done
  site
  cleanup_work
}
trap restore EXIT
site
# (read before any snippet of this test is in place)
major=$(srun --version | sed -n 's/^slurm[^0-9]*\([0-9]*\)\..*/\1/p')
[[ -n $major ]] || fail "cannot read Slurm's major version from: $(srun --version 2>&1)"

# A plugin built for the series before this Slurm's: what a node still has
# after Slurm was upgraded in place (Slurm checks major.minor only).
mkdir -p "$WORK/old"
cat >"$WORK/old/plugin.c" <<'C'
#include <stdint.h>
#include <slurm/spank.h>
const char plugin_name[] = "dp";
const char plugin_type[] = "spank";
const unsigned int plugin_version = SLURM_VERSION_NUMBER - SLURM_VERSION_NUM(1, 0, 0);
const unsigned int spank_plugin_version = 0;
int slurm_spank_init(spank_t sp, int ac, char **av) { (void)sp; (void)ac; (void)av; return 0; }
C
cc -shared -fPIC -o "$WORK/old/spank_dp.so" "$WORK/old/plugin.c" || fail "cannot build the stand-in plugin"
sed "s|^PlugStackConfig=.*|PlugStackConfig=$WORK/plugstack.conf|" "$SLURM_CONF" >"$WORK/slurm.conf"
chmod -R a+rX "$WORK"
# As the user, on "srun's host": the copy of slurm.conf.
login() { (SLURM_CONF=$WORK/slurm.conf as_user timeout 60 "$@") 2>&1; }

# ---- 1. srun's host
for plugin in "$WORK/none/spank_dp.so" "$WORK/old/spank_dp.so"; do
  echo "required $plugin" >"$WORK/plugstack.conf"
  for cmd in "srun -N1 -n1 true" "sbatch --wrap true" "salloc -N1 true"; do
    rc=0
    # shellcheck disable=SC2086  # the command's words
    out=$(login $cmd) || rc=$?
    echo "$cmd with $plugin: rc $rc"
    echo "$out"
    ((rc != 0)) || fail "$cmd ran with an unloadable plugin line ($plugin)"
    expect_contains "$out" "plugstack.conf:1: Failed to load plugin $plugin. Aborting." "$cmd's stderr"
    case $cmd in
      srun*) expect_contains "$out" "srun: error: Plug-in initialization failed" "srun's stderr" ;;
      *) expect_contains "$out" "error: Failed to initialize plugin stack" "${cmd%% *}'s stderr" ;;
    esac
    if [[ $plugin == */old/* ]]; then
      expect_contains "$out" "Incompatible Slurm plugin $plugin version (" "$cmd's stderr"
    fi
    [[ -z $(squeue -h -u "$DP_TEST_USER") ]] || fail "$cmd queued a job with an unloadable plugin line"
  done
done

# ---- 2. a node: the nodes' plugstack names the old plugin; srun's host loads none.
: >"$WORK/plugstack.conf"
log=$DP_CLUSTER_DIR/log/slurmd-n1.log
from=$(($(wc -l <"$log") + 1))
echo "required $WORK/old/spank_dp.so" >"$broken"
rc=0
out=$(login srun -N1 -n1 -w n1 true) || rc=$?
echo "srun -w n1 true, n1's plugin built for another series: rc $rc"
echo "$out"
# Slurm 26.05's srun no longer passes slurmd's reason on.
reason="Plugin initialization failed"
((major < 26)) || reason="Unspecified error"
expect_contains "$out" "task 0 launch failed: $reason" "srun's stderr"
wait_until 10 "n1's slurmd log to name the plugin" \
  bash -c "tail -n +$from '$log' | grep -q 'Failed to load plugin $WORK/old/spank_dp.so'"
tail -n +"$from" "$log" | grep -E 'Incompatible|Failed to load plugin|initialization failed' \
  || fail "n1's slurmd log has no line about the plugin"
tail -n +"$from" "$log" | grep -q "Incompatible Slurm plugin $WORK/old/spank_dp.so version (" \
  || fail "n1's slurmd log does not say the plugin's version is incompatible"
out=$(login sbatch -N1 -w n1 -o /dev/null --wrap true) || fail "sbatch refused: $out"
job=${out##* }
# The job itself ends (22.05) or goes back to the queue, held (24.11 on).
wait_until 30 "n1 to drain after batch job $job" bash -c '[[ $(sinfo -h -n n1 -o %T) == drain* ]]'
reason=$(scontrol show node n1 | sed -n 's/.*Reason=\(.*\) \[.*/\1/p')
echo "a batch job on n1: n1 $(sinfo -h -n n1 -o %T), reason '$reason'; the job: $(scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]* Reason=[^ ]*' || echo gone)"
scancel "$job" 2>/dev/null || true
[[ $(sinfo -h -n n1 -o %T) == drain* && $reason == "batch job complete failure" ]] \
  || fail "a batch job on a node that cannot load the plugin did not drain it: $(scontrol show node n1 | grep -E 'State|Reason')"
rm -f "$broken"
scontrol update nodename=n1 state=resume
wait_until 30 "n1 to be resumed" bash -c '[[ $(sinfo -h -n n1 -o %T) == idle ]]'

# ---- 3. srun's host without the plugin
out=$(login srun -N1 -n1 --dp-world=auto true) && fail "--dp-world ran on a host without the plugin"
echo "$out"
expect_contains "$out" "unrecognized option '--dp-world=auto'" "srun's stderr"
site default=on
out=$(login srun -N2 --ntasks-per-node=1 true) && fail "a default=on step ran though srun did not prepare it"
echo "$out"
expect_contains "$out" "srun did not prepare this step for slurm-dp" "the tasks' stderr"
pass "every Troubleshooting message of the plugin line, where the admin guide says it lands"
