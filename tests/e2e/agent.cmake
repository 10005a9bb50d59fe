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
