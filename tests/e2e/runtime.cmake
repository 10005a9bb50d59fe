# libdp on the real local cluster (label e2e), in both network modes:
# srun --dp-world=auto -N2 --ntasks-per-node=2 of the multi-process test
# worker (every collective exact; kill -9 of one rank fails the others,
# naming it, within 10 s); and on one node, all_reduce through shared memory.
# The scripts point the cluster at the built daemon.
dp_e2e_scripts(PART runtime MODES lo ns TIMEOUT 300
  SCRIPTS collectives kill_rank one_node_shm restart_in_place
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>)
# A libdp program that exits after its goodbye, in a step whose tasks keep
# their programs (--dp-max-restarts): the task ends with it. Not a matter of
# the network: the loopback cluster only.
dp_e2e_scripts(PART runtime MODES lo TIMEOUT 200
  SCRIPTS keeper_linger
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>)
# Shared memory that cannot be had, or a rank killed during its start-up.
add_library(dp_shm_shim MODULE ${CMAKE_CURRENT_LIST_DIR}/runtime/shm_shim.c)
target_link_libraries(dp_shm_shim PRIVATE ${CMAKE_DL_LIBS})
dp_e2e_test(NAME runtime.shm_failures MODES lo ns TIMEOUT 300
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>
              DP_SHM_SHIM=$<TARGET_FILE:dp_shm_shim>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/runtime/shm_failures.sh)
