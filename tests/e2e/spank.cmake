# SPANK plugin e2e tests, one script
# per feature under spank/, run against the real cluster in both network
# modes. The scripts run jobs as `dptest` (and attacks as `dptest2`) and
# point the cluster at the built daemon with `site` (tests on one cluster
# never overlap: dp_e2e_test takes the cluster's RESOURCE_LOCK).
dp_e2e_scripts(PART spank MODES lo ns TIMEOUT 300
  SCRIPTS env_vars untouched batch_alloc batch_master_port gres_masks explain
          concurrent_ports tenant_leases master_failure hostile_env overlap_ports tiles_request
          unlaunched_step master_socket step_ports jax_coordinator forged_resv_ports
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
# 40 steps against another user's bind loop on the master node, in its own
# network namespace (the agents watch that namespace's listeners): the
# namespaced cluster alone, the two clusters' shares even.
dp_e2e_scripts(PART spank MODES ns TIMEOUT 300
  SCRIPTS late_bind
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
# What does not depend on the network runs on one cluster: refused options
# (before any task starts) and the per-user share of the lease range on the
# loopback one, the daemon's file limits on the namespaced one.
dp_e2e_scripts(PART spank MODES lo TIMEOUT 300
  SCRIPTS bad_input lease_cap
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
dp_e2e_scripts(PART spank MODES ns TIMEOUT 300
  SCRIPTS file_limit
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
# A firewalled login host: nodes reach the host on slurmctld's port and
# SrunPortRange only (nftables in the nodes' own namespaces).
dp_e2e_scripts(PART spank MODES ns TIMEOUT 300
  SCRIPTS srun_port_range
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>)
# Slurm starts a requeued job again after the cluster's cred_expire (30 s);
# a requeue does not depend on the network (the loopback cluster only).
dp_e2e_test(NAME spank.requeue MODES lo TIMEOUT 600
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/spank/requeue.sh)
# Per-node launchers (torchrun and its kin) on Debian 12's torch 1.13.
dp_e2e_scripts(PART spank MODES lo ns TIMEOUT 400
  SCRIPTS launcher_shape launcher_kill
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
# The launchers' variables and forms, and overlapping launches on one node
# (each with its own master port, sharpest where every node shares one
# loopback), on the loopback cluster only; launcher_kill trains torchrun's
# workers across both clusters' networks.
dp_e2e_scripts(PART spank MODES lo TIMEOUT 400
  SCRIPTS launcher_torchrun launcher_overlap
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
# A test's own SPANK plugin, loaded before slurm-dp's, and the test that
# loads it (SCRIPT.sh, given the plugin's path in VAR).
function(dp_e2e_plugin_test name var)
  add_library(dp_test_${name} MODULE ${CMAKE_CURRENT_LIST_DIR}/spank/${name}_plugin.c)
  set_target_properties(dp_test_${name} PROPERTIES PREFIX "")
  target_include_directories(dp_test_${name} SYSTEM PRIVATE ${SLURM_INCLUDE_DIR})
  dp_warnings(dp_test_${name})
  dp_e2e_test(NAME spank.${name} MODES lo ns TIMEOUT 300
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> ${var}=$<TARGET_FILE:dp_test_${name}>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/spank/${name}.sh)
endfunction()
# A stand-in for pyxis: a SPANK plugin that overwrites MASTER_ADDR, MASTER_PORT,
# WORLD_SIZE and RANK in task_init, as pyxis's import of a container image's
# environment does; container_env.sh loads it before slurm-dp.
dp_e2e_plugin_test(container_env DP_TEST_CONTAINER_PLUGIN)
# Tasks 1-3 late to slurm-dp's task_init (a stand-in plugin before it
# sleeps): rank 0's program still binds MASTER_PORT.
dp_e2e_plugin_test(late_task DP_TEST_LATE_TASK_PLUGIN)
# Every port of a small lease range held by another tenant on the master node:
# the step fails within 10 s saying so and naming the holder's uid.
dp_e2e_test(NAME spank.held_range MODES lo ns TIMEOUT 300
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/spank/held_range.sh)
# Its own cluster without MpiParams=ports= (Slurm reserves no port), 50 ports
# after the shared lo cluster's base: a user's SLURM_STEP_RESV_PORTS refused.
add_test(NAME e2e.own.spank.forged_resv_ports_no_mpi
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/spank/forged_resv_ports_no_mpi.sh)
set_tests_properties(e2e.own.spank.forged_resv_ports_no_mpi PROPERTIES
  LABELS "e2e" TIMEOUT 300
  ENVIRONMENT "DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>;DP_CLUSTER_PLUGIN=$<TARGET_FILE:spank_dp>;DP_BUILD_DIR=${CMAKE_BINARY_DIR};DP_CLUSTER_PORT_BASE=${DP_CLUSTER_PORT_BASE};DP_SOURCE_DIR=${PROJECT_SOURCE_DIR};DP_CLUSTER=${DP_CLUSTER}")
# Its own cluster (GPU UUIDs need slurmd started so), 75 ports after the
# shared lo cluster's base; skipped before Slurm 26.05.
add_test(NAME e2e.own.spank.gres_uuid COMMAND ${CMAKE_CURRENT_LIST_DIR}/spank/gres_uuid.sh)
set_tests_properties(e2e.own.spank.gres_uuid PROPERTIES
  LABELS "e2e;debian-testing" TIMEOUT 300 SKIP_RETURN_CODE 77 RESOURCE_LOCK cluster_own75
  ENVIRONMENT "DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>;DP_CLUSTER_PLUGIN=$<TARGET_FILE:spank_dp>;DP_BUILD_DIR=${CMAKE_BINARY_DIR};DP_CLUSTER_PORT_BASE=${DP_CLUSTER_PORT_BASE};DP_SOURCE_DIR=${PROJECT_SOURCE_DIR};DP_CLUSTER=${DP_CLUSTER}")
# Its own cluster whose nodes confine each task to its GPUs (task/cgroup,
# ConstrainDevices=yes), on gres_uuid's ports: Debian 12's Slurm (cgroup/v1).
add_test(NAME e2e.own.spank.confined_gpus COMMAND ${CMAKE_CURRENT_LIST_DIR}/spank/confined_gpus.sh)
set_tests_properties(e2e.own.spank.confined_gpus PROPERTIES
  LABELS "e2e" TIMEOUT 300 RESOURCE_LOCK cluster_own75
  ENVIRONMENT "DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>;DP_CLUSTER_PLUGIN=$<TARGET_FILE:spank_dp>;DP_BUILD_DIR=${CMAKE_BINARY_DIR};DP_CLUSTER_PORT_BASE=${DP_CLUSTER_PORT_BASE};DP_SOURCE_DIR=${PROJECT_SOURCE_DIR};DP_CLUSTER=${DP_CLUSTER}")
