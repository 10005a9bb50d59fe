#!/usr/bin/env bash
# Inside a container, pyxis's task_init imports the image's environment with
# overwrite, and NGC images carry enroot's MASTER_ADDR, MASTER_PORT
# (61000 + job id % 4536), WORLD_SIZE and RANK. A stand-in plugin that does
# the same (container_env_plugin.c), named pyxis.conf in plugstack.conf.d and
# so loaded before slurm-dp's snippet: every task still gets slurm-dp's values.
. "$(dirname "$0")/../lib.sh"
conf=$DP_CLUSTER_DIR/etc/plugstack.conf.d/pyxis.conf
cleanup() {
  rm -f "$conf"
  cleanup_work
}
trap cleanup EXIT
site

# The package's snippet name collates after pyxis.conf (Slurm expands the
# include with glob(3), sorted by the locale), as this cluster's does.
for locale in C C.UTF-8; do
  order=$(printf '%s\n' slurm-dp.conf pyxis.conf | LC_ALL=$locale sort | tr '\n' ' ')
  [[ $order == 'pyxis.conf slurm-dp.conf ' ]] || fail "in locale $locale slurm-dp.conf sorts before pyxis.conf: $order"
done
[[ -f $DP_CLUSTER_DIR/etc/plugstack.conf.d/slurm-dp.conf ]] || fail "the cluster's snippet is not named as the package's (slurm-dp.conf)"

show='echo "$SLURM_PROCID $RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT ${DP_TEST_CONTAINER_HOOK:-none}"'
step=(srun -N2 --ntasks-per-node=2 --dp-world=auto bash -c "$show")
plain=$(as_user timeout 60 "${step[@]}") || fail "the step without the stand-in failed: $plain"
addr=$(awk 'NR == 1 {print $4}' <<<"$plain")
[[ -n $addr && $addr != container-master ]] || fail "no MASTER_ADDR without the stand-in: $plain"

echo "required $DP_TEST_CONTAINER_PLUGIN" >"$conf"
chmod 644 "$conf"
out=$(as_user env DP_TEST_CONTAINER_ENV=1 timeout 60 "${step[@]}") || fail "the step with the stand-in failed: $out"
echo "$out"
[[ $(grep -c . <<<"$out") -eq 4 ]] || fail "4 tasks expected"
ports=()
while read -r id rank world master port hook; do
  [[ $hook =~ ^6[0-9]{4}$ ]] || fail "task $id: the stand-in did not run (DP_TEST_CONTAINER_HOOK=$hook)"
  [[ $rank == "$id" ]] || fail "task $id: RANK=$rank, the container's value, not slurm-dp's"
  [[ $world == 4 ]] || fail "task $id: WORLD_SIZE=$world, not slurm-dp's 4"
  [[ $master == "$addr" ]] || fail "task $id: MASTER_ADDR=$master, not slurm-dp's $addr"
  [[ $port != "$hook" ]] || fail "task $id: MASTER_PORT=$port is the container hook's hashed port"
  ports+=("$port")
done <<<"$out"
[[ $(printf '%s\n' "${ports[@]}" | sort -u | wc -l) -eq 1 ]] || fail "the tasks disagree on MASTER_PORT: ${ports[*]}"
pass "a plugin that sets the container's MASTER_*/WORLD_SIZE/RANK before slurm-dp does not change the task's values"
