# SPANK plugin e2e tests (issue 3 and the plugin side of issue 4), one script
# per feature under spank/, each run against the real cluster in both network
# modes. The scripts run jobs as `dptest` and point the cluster at the built
# daemon with `dp-cluster plugstack daemon=...`.
set(_dp_spank_e2e env_vars untouched batch_alloc gres_masks bad_input explain
    concurrent_ports daemon_lifecycle)
# These rewrite the site settings for a while (bad values, resv_ports=ignore):
# nothing else may run on the cluster meanwhile.
set(_dp_spank_e2e_serial bad_input concurrent_ports)

if(COMMAND dp_e2e_test)
  foreach(t IN LISTS _dp_spank_e2e)
    dp_e2e_test(NAME spank.${t} MODES lo ns
      COMMAND env DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
                  DP_CLUSTER_SCRIPT=${PROJECT_SOURCE_DIR}/tests/cluster/dp-cluster
                  ${CMAKE_CURRENT_SOURCE_DIR}/spank/${t}.sh)
  endforeach()
  foreach(t IN LISTS _dp_spank_e2e_serial)
    foreach(mode lo ns)
      if(TEST spank.${t}.${mode})
        set_tests_properties(spank.${t}.${mode} PROPERTIES RUN_SERIAL ON)
      endif()
    endforeach()
  endforeach()
else()
  message(STATUS "slurm-dp: dp_e2e_test() not defined yet; SPANK e2e tests not registered")
endif()
