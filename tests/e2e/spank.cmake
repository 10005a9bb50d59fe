# SPANK plugin e2e tests (issue 3 and the plugin side of issue 4), one script
# per feature under spank/, run against the real cluster in both network
# modes. The scripts run jobs as `dptest` (and attacks as `dptest2`) and
# point the cluster at the built daemon with `site` (tests on one cluster
# never overlap: dp_e2e_test takes the cluster's RESOURCE_LOCK).
foreach(t env_vars untouched batch_alloc batch_master_port gres_masks bad_input explain concurrent_ports
          tenant_leases master_failure hostile_env overlap_ports tiles_request
          unlaunched_step file_limit)
  dp_e2e_test(NAME spank.${t} MODES lo ns TIMEOUT 300
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/spank/${t}.sh)
endforeach()
# Slurm starts a requeued job again after the cluster's cred_expire (30 s).
dp_e2e_test(NAME spank.requeue MODES lo ns TIMEOUT 600
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/spank/requeue.sh)
# Every port of a small lease range held by another tenant on the master node:
# the step fails within 10 s saying so and naming the holder's uid.
dp_e2e_test(NAME spank.held_range MODES lo ns TIMEOUT 300
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/spank/held_range.sh)
