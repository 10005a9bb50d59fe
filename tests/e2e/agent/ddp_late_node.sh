#!/usr/bin/env bash
# Start-up skew (issue 33): rank 0's node starts its tasks 8 s after the other
# node's, as when a container plugin pulls that node's image late (a stand-in,
# late_node_plugin.c, sleeps in user_init, where pyxis pulls). The site's
# port_wait is 2 s and MASTER_PORT is leased (resv_ports=ignore), so the other
# node fetches rank 0's node's ports: the master node publishes them in
# init_post_opt, before any plugin's user_init, so the other node does not
# wait out port_wait, and its ranks wait in PyTorch's store within PyTorch's
# own timeout. Unmodified DDP (gloo, env://) on 2 nodes x 2 tasks ends as
# without the skew, with the step's store and with rank 0's. (The same
# stand-in sleeping in init_post_opt, before slurm-dp's, is skew of
# slurmstepd's own start: the other node fails after port_wait, named.)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
conf=$DP_CLUSTER_DIR/etc/plugstack.conf.d/pyxis.conf
cleanup() {
  rm -f "$conf"
  site
  cleanup_work
}
trap cleanup EXIT
use_port_leases late kill_grace=2 port_wait=2 "ports=$(test_port_range)"
pytorch_launcher_env
echo "required $DP_TEST_LATE_PLUGIN" >"$conf"
chmod 644 "$conf"
late_ms=8000
for store in step rank0; do
  rm -f "$WORK"/late.* "$WORK"/rank*.log
  ddp_env=("${pet[@]}" DP_TEST_LATE_NODEID=0 DP_TEST_LATE_MS=$late_ms DP_TEST_LATE_MARK="$WORK/late")
  ddp_srun_flags=(--dp-store=$store)
  t0=$(date +%s%N)
  start_ddp "late-$store" --steps 10
  expect_srun_ok 120 "a DDP step whose rank 0 node started ${late_ms} ms late (--dp-store=$store)"
  [[ -f $WORK/late.0 ]] || fail "--dp-store=$store: the stand-in did not delay node 0 (no $WORK/late.0)"
  [[ ! -e $WORK/late.1 ]] || fail "--dp-store=$store: the stand-in delayed node 1 too"
  took_ms=$((($(date +%s%N) - t0) / 1000000))
  ((took_ms >= late_ms)) || fail "--dp-store=$store: the step took ${took_ms} ms, less than the ${late_ms} ms skew"
  same_params "--dp-store=$store" || exit 1
  echo "--dp-store=$store: ${late_ms} ms of start-up skew (port_wait=2 s) waited for; the step took ${took_ms} ms"
done
pass "start-up skew beyond port_wait in a container plugin's user_init is waited for, with either store"
