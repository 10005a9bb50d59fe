# The benchmarks that need a Slurm cluster, once each in their smoke mode on
# the lo cluster (labels e2e and bench; the others are bench.* in bench/).
foreach(entry srun_overhead/run.sh:srun_overhead trainer/accuracy.sh:trainer_accuracy
              hang_watch/run.sh:hang_watch hang_watch/wide_step.sh:wide_step
              straggler/run.sh:straggler)
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 script)
  list(GET parts 1 name)
  dp_e2e_test(NAME bench.${name} MODES lo TIMEOUT 300
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench/smoke.sh ${PROJECT_SOURCE_DIR}/bench/${script}
            --smoke ${CMAKE_BINARY_DIR})
  set_property(TEST e2e.lo.bench.${name} APPEND PROPERTY LABELS bench)
endforeach()
# A lost node, slurm-dp's spare (bench/restart/run.sh --smoke: one run, the
# torchrun anchor left out): a 3-node cluster of its own, on the ports of the
# restart tests (their lock).
math(EXPR _dp_bench_restart_base "${DP_CLUSTER_PORT_BASE} + 75")
add_test(NAME e2e.own.bench.restart
         COMMAND ${PROJECT_SOURCE_DIR}/bench/restart/run.sh --smoke ${CMAKE_BINARY_DIR})
set_tests_properties(e2e.own.bench.restart PROPERTIES
  LABELS "e2e;bench" TIMEOUT 600 SKIP_RETURN_CODE 77 RESOURCE_LOCK cluster_own75
  ENVIRONMENT "DP_BENCH_PORT_BASE=${_dp_bench_restart_base}")
