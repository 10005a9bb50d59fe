# dp-trainer on the real local cluster (label e2e): srun --dp-world=auto with
# the plugin loaded, Gloo through the plugin's daemon, jobs run as `dptest`.
if(NOT DEFINED DP_E2E_CLUSTER_DIR)
  set(DP_E2E_CLUSTER_DIR ${CMAKE_BINARY_DIR}/e2e-cluster)
endif()
foreach(_dp_tr_test mlp_accuracy preempt_resume demo)
  add_test(NAME trainer.e2e.${_dp_tr_test}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/trainer/${_dp_tr_test}.sh)
  set_tests_properties(trainer.e2e.${_dp_tr_test} PROPERTIES
    LABELS e2e
    FIXTURES_REQUIRED dp_cluster
    TIMEOUT 300
    ENVIRONMENT "DP_CLUSTER_DIR=${DP_E2E_CLUSTER_DIR};DP_CLUSTER_SCRIPT=${DP_CLUSTER};DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>;DP_TRAINER=$<TARGET_FILE:dp-trainer>")
endforeach()
