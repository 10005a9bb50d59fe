# The node agent on the real cluster: every rank talks only to its
# node's agent; a rank's or an agent's death is named in time; no agent or
# daemon outlives its step.
dp_e2e_scripts(PART agent MODES lo ns TIMEOUT 300
  SCRIPTS connections kill_rank kill_agent
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_RDV_PROBE=$<TARGET_FILE:dp-rdv-probe>
              DP_TOP=$<TARGET_FILE:dp-top>)
# 100 two-node steps take about 2 minutes on 2 shared cores. Which processes
# a step leaves does not depend on the network: the namespaced cluster only.
dp_e2e_test(NAME agent.lifecycle MODES ns TIMEOUT 900
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent/lifecycle.sh)
# Fail fast for a program that never talks to slurm-dp (pytorch/ddp.py, no
# libdp): a killed rank, a frozen node, a cut link end the whole step, named.
dp_e2e_scripts(PART agent MODES lo ns TIMEOUT 400
  SCRIPTS ddp_kill_rank
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_TOP=$<TARGET_FILE:dp-top>)
# What does not depend on the network runs on one cluster, the two about
# even: a suspended job (every process stopped at once; daemon.suspend runs
# on the namespaced one) and the survivors kept on the loopback cluster, a
# frozen node (its processes stopped) on the namespaced one.
dp_e2e_scripts(PART agent MODES lo TIMEOUT 400
  SCRIPTS ddp_suspend ddp_keep_survivors
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_TOP=$<TARGET_FILE:dp-top>)
dp_e2e_scripts(PART agent MODES ns TIMEOUT 400
  SCRIPTS ddp_freeze_node
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_TOP=$<TARGET_FILE:dp-top>)
dp_e2e_test(NAME agent.ddp_cut_link MODES ns TIMEOUT 300
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent/ddp_cut_link.sh)
# Signals are the tasks' (issue 31): scancel --signal, --signal=SIG@T, srun's
# Ctrl-C and scancel reach a step as without slurm-dp, and a step the user
# ended is named as such, not as a failure; an agent the user stopped is no
# lost node. Signals do not depend on the network, so the loopback cluster only.
dp_e2e_scripts(PART agent MODES lo TIMEOUT 400
  SCRIPTS step_signals step_interrupt ddp_stopped_agent kill_wait ignore_signals
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
# Skipped (77) where srun has no --ignore-signals (before Slurm 26.05).
set_tests_properties(e2e.lo.agent.ignore_signals PROPERTIES SKIP_RETURN_CODE 77)
# A network outage shorter than the site's bound is survived (the agent
# reconnects), a longer one is the node's verdict; a partition between nodes
# is the documented limit.
dp_e2e_test(NAME agent.ddp_outage MODES ns TIMEOUT 400
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent/ddp_outage.sh)
dp_e2e_test(NAME agent.ddp_partition MODES ns TIMEOUT 300
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent/ddp_partition.sh)
# The step's PyTorch store (--dp-store=step, issue 33): unmodified DDP through
# the node agents' store, rank 0's key outliving rank 0, a stranger refused.
dp_e2e_test(NAME agent.step_store MODES lo ns TIMEOUT 400
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_TOP=$<TARGET_FILE:dp-top>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent/step_store.sh)
# A request is its client's, never the node's (issue 43): PyTorch's large
# values, a long key and a timed-out wait through the step's store, an
# over-limit value refused for its client alone, against rank 0's store.
dp_e2e_test(NAME agent.store_requests MODES lo TIMEOUT 400
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent/store_requests.sh)
# Start-up skew: rank 0's node 8 s late in user_init (a stand-in for a
# container plugin's image pull, loaded as pyxis.conf) with port_wait=2.
add_library(dp_test_late_node MODULE ${CMAKE_CURRENT_LIST_DIR}/agent/late_node_plugin.c)
set_target_properties(dp_test_late_node PROPERTIES PREFIX "")
target_include_directories(dp_test_late_node SYSTEM PRIVATE ${SLURM_INCLUDE_DIR})
dp_warnings(dp_test_late_node)
dp_e2e_test(NAME agent.ddp_late_node MODES lo TIMEOUT 300
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
              DP_TEST_LATE_PLUGIN=$<TARGET_FILE:dp_test_late_node>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent/ddp_late_node.sh)
# Restarts in place (issue 54): a lost node replaced by a spare, a frozen one,
# a second loss, the restart budget, a crash restarted in place, --no-kill
# refused. A cluster of their own (3 nodes in namespaces: a lost node's slurmd
# is killed and started again), 75 ports after the lo cluster's base: one at
# a time with gres_uuid's, which uses the same ports.
foreach(t ddp_spares ddp_spares_more torchrun_spares spares_ghosts spares_fencing spares_bad_node)
  add_test(NAME e2e.own.agent.${t} COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent/${t}.sh)
  set_tests_properties(e2e.own.agent.${t} PROPERTIES
    LABELS e2e TIMEOUT 900 RESOURCE_LOCK cluster_own75
    ENVIRONMENT "DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>;DP_CLUSTER_PLUGIN=$<TARGET_FILE:spank_dp>;DP_BUILD_DIR=${CMAKE_BINARY_DIR};DP_CLUSTER_PORT_BASE=${DP_CLUSTER_PORT_BASE};DP_SOURCE_DIR=${PROJECT_SOURCE_DIR};DP_CLUSTER=${DP_CLUSTER};DP_TOP=$<TARGET_FILE:dp-top>")
endforeach()
# The testing lane: what its Slurm 26.05 (srun's exit status after a restart)
# and PyTorch 2.14 (torchrun's redundancy list, its worker store shared per
# rendezvous) change. Their rare stall there (a killed node's agent said
# goodbye before its SIGKILL, agent/README.md) is fixed and tested in
# tests/unit/agent. torchrun's rendezvous state (the lost launcher aged in
# it, daemon/torchrun_launchers.hpp) differs in each PyTorch: every lane.
foreach(t ddp_spares torchrun_spares)
  set_property(TEST e2e.own.agent.${t} APPEND PROPERTY LABELS debian-testing)
endforeach()
set_property(TEST e2e.own.agent.torchrun_spares APPEND PROPERTY LABELS debian13)
