# dp-rendezvousd on the real cluster (label e2e): a 128-byte ID exchanged by
# srun --dp-world=auto -N2 --ntasks-per-node=2 ranks, and kill -9 of a rank.
# The daemon life cycle (100 steps, scancel, failing task) is tested by spank.daemon_lifecycle.
add_executable(dp-rdv-probe ${CMAKE_CURRENT_LIST_DIR}/daemon/rdv_probe.cpp)
target_link_libraries(dp-rdv-probe PRIVATE dp_client)
dp_warnings(dp-rdv-probe)

if(COMMAND dp_e2e_test)
  foreach(t exchange_id kill_rank stopped_daemon)
    dp_e2e_test(NAME daemon.${t} MODES lo ns
      COMMAND env DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
                  DP_RDV_PROBE=$<TARGET_FILE:dp-rdv-probe>
                  DP_CLUSTER_SCRIPT=${PROJECT_SOURCE_DIR}/tests/cluster/dp-cluster
                  ${CMAKE_CURRENT_LIST_DIR}/daemon/${t}.sh)
  endforeach()
  # 2 000 connections without hello against a step's daemon; its listen address.
  dp_e2e_test(NAME daemon.hostile_connections MODES lo ns TIMEOUT 300
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_CLUSTER_SCRIPT=${DP_CLUSTER}
                DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/daemon/hostile_connections.sh)
  # A late dp::init() and a second one in the same step (the daemon outlives neither srun nor them).
  dp_e2e_test(NAME daemon.lifetime MODES lo ns TIMEOUT 300
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_CLUSTER_SCRIPT=${DP_CLUSTER}
                DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/daemon/lifetime.sh)
  # scontrol suspend for 20 s of a 2-node trainer job: the same final parameters.
  if(TARGET dp-trainer)
    dp_e2e_test(NAME daemon.suspend MODES lo ns TIMEOUT 600
      ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_CLUSTER_SCRIPT=${DP_CLUSTER}
                  DP_TRAINER=$<TARGET_FILE:dp-trainer>
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/daemon/suspend.sh)
  endif()
else()
  message(STATUS "slurm-dp: dp_e2e_test() not defined yet; daemon e2e tests not registered")
endif()
