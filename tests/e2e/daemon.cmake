# dp-rendezvousd on the real cluster (label e2e): a 128-byte ID exchanged by
# srun --dp-world=auto -N2 --ntasks-per-node=2 ranks, and kill -9 of a rank.
# The daemon life cycle (100 steps, scancel, failing task) is tested by spank.daemon_lifecycle.
add_executable(dp-rdv-probe ${CMAKE_CURRENT_LIST_DIR}/daemon/rdv_probe.cpp)
target_link_libraries(dp-rdv-probe PRIVATE dp_client)
dp_warnings(dp-rdv-probe)

foreach(t exchange_id kill_rank)
  dp_e2e_test(NAME daemon.${t} MODES lo ns
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_RDV_PROBE=$<TARGET_FILE:dp-rdv-probe>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/daemon/${t}.sh)
endforeach()
