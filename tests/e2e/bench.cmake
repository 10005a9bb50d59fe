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
