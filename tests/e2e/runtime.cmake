# libdp on the real local cluster (label e2e): srun --dp-world=auto -N2
# --ntasks-per-node=2 of the multi-process test worker, in whatever network
# mode the cluster runs (lo or ns). The scripts read the cluster from
# DP_CLUSTER_DIR (via `dp-cluster env`) and need the plugin loaded.
if(NOT DEFINED DP_E2E_CLUSTER_DIR)
  set(DP_E2E_CLUSTER_DIR ${CMAKE_BINARY_DIR}/e2e-cluster)
endif()
foreach(_dp_rt_test collectives kill_rank)
  add_test(NAME runtime.e2e.${_dp_rt_test}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/runtime/${_dp_rt_test}.sh)
  set_tests_properties(runtime.e2e.${_dp_rt_test} PROPERTIES
    LABELS e2e
    FIXTURES_REQUIRED dp_cluster
    TIMEOUT 300
    ENVIRONMENT "DP_CLUSTER_DIR=${DP_E2E_CLUSTER_DIR};DP_CLUSTER_SCRIPT=${DP_CLUSTER};DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>;DP_COMM_WORKER=$<TARGET_FILE:dp_comm_worker>")
endforeach()
