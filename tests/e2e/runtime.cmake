# libdp on the real local cluster (label e2e), in both network modes:
# srun --dp-world=auto -N2 --ntasks-per-node=2 of the multi-process test
# worker (every collective exact; kill -9 of one rank fails the others,
# naming it, within 10 s); and on one node, all_reduce through shared memory.
# The scripts point the cluster at the built daemon.
foreach(t collectives kill_rank one_node_shm)
  dp_e2e_test(NAME runtime.${t} MODES lo ns TIMEOUT 300
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/runtime/${t}.sh)
endforeach()
