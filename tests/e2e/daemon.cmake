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
# A rolling upgrade: the next two releases' daemon and agent are this code
# linked with protocol versions 4 (it speaks 3 too) and 5, each pair in a
# folder of its own as the plugin finds them; a step mixes them with this
# release's.
foreach(newest 4 5)
  add_library(dp_protocol_v${newest} OBJECT ${PROJECT_SOURCE_DIR}/proto/protocol_version.cpp)
  target_compile_definitions(dp_protocol_v${newest} PRIVATE DP_PROTOCOL_NEWEST=${newest})
  target_link_libraries(dp_protocol_v${newest} PRIVATE dp_proto)
  dp_warnings(dp_protocol_v${newest})
  dp_daemon_executable(dp-rendezvousd-v${newest} $<TARGET_OBJECTS:dp_protocol_v${newest}>)
  dp_agent_executable(dp-nodeagent-v${newest} $<TARGET_OBJECTS:dp_protocol_v${newest}>)
  set_target_properties(dp-rendezvousd-v${newest} PROPERTIES OUTPUT_NAME dp-rendezvousd
                        RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/upgrade/v${newest})
  set_target_properties(dp-nodeagent-v${newest} PROPERTIES OUTPUT_NAME dp-nodeagent
                        RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/upgrade/v${newest})
endforeach()
dp_e2e_scripts(PART daemon MODES lo TIMEOUT 300
  SCRIPTS mixed_versions
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_RDV_PROBE=$<TARGET_FILE:dp-rdv-probe>
              DP_UPGRADE_DIR=${CMAKE_BINARY_DIR}/upgrade)
