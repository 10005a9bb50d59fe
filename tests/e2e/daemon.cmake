# dp-rendezvousd on the real cluster (label e2e): a 128-byte ID exchanged by
# srun --dp-world=auto -N2 --ntasks-per-node=2 ranks. kill -9 of a rank and
# the life cycle (100 steps, scancel, failing task) are agent.kill_rank and
# agent.lifecycle.
add_executable(dp-rdv-probe ${CMAKE_CURRENT_LIST_DIR}/daemon/rdv_probe.cpp)
target_link_libraries(dp-rdv-probe PRIVATE dp_client)
dp_warnings(dp-rdv-probe)

dp_e2e_scripts(PART daemon MODES lo ns
  SCRIPTS exchange_id stopped_daemon
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_RDV_PROBE=$<TARGET_FILE:dp-rdv-probe>)
# 2 000 connections without hello against a step's daemon; its listen address.
dp_e2e_scripts(PART daemon MODES lo ns TIMEOUT 300
  SCRIPTS hostile_connections
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>)
# A late dp::init() and a second one in the same step: how long the daemon
# lives does not depend on the network (the namespaced cluster only, the two
# clusters' shares even).
dp_e2e_scripts(PART daemon MODES ns TIMEOUT 300
  SCRIPTS lifetime
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>)
# scontrol suspend for 20 s of a 2-node trainer job: the same final parameters.
# Stopped processes do not depend on the network: the namespaced cluster only
# (agent.ddp_suspend runs on the loopback one).
if(TARGET dp-trainer)
  dp_e2e_test(NAME daemon.suspend MODES ns TIMEOUT 600
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_TRAINER=$<TARGET_FILE:dp-trainer>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/daemon/suspend.sh)
endif()
# Another user floods each new step daemon's port from the login node, then
# from the master node's namespace: 5 of 5 steps start and end each time.
dp_e2e_test(NAME daemon.stranger_flood MODES ns TIMEOUT 600
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/daemon/stranger_flood.sh)
