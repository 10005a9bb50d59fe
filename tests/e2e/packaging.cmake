# Packaging e2e: install the base .deb with apt, run a 2x2 step from the installed
# files only (source and build trees hidden), purge, check nothing remains.
# It brings up its own cluster (inside a private mount namespace), on the 50
# ports after this tree's shared cluster, so both can run at once.
if(DEFINED DP_CLUSTER_PORT_BASE)
  math(EXPR _dp_pkg_port_base "${DP_CLUSTER_PORT_BASE} + 50")
else()
  set(_dp_pkg_port_base 17050)
endif()
if(NOT DEFINED DP_SLURM_CONF_DIR)
  set(DP_SLURM_CONF_DIR /etc/slurm)  # packaging/CMakeLists.txt declares it; it is read later
endif()
if(IS_ABSOLUTE "${DP_SLURM_PLUGIN_DIR}")
  set(_dp_pkg_plugin "${DP_SLURM_PLUGIN_DIR}/spank_dp.so")
else()
  set(_dp_pkg_plugin "${CMAKE_INSTALL_PREFIX}/${DP_SLURM_PLUGIN_DIR}/spank_dp.so")
endif()
add_test(NAME e2e.own.packaging.install_run_purge_deb
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/packaging/install-from-deb
                 ${CMAKE_BINARY_DIR}/packages
                 ${PROJECT_SOURCE_DIR}/tests/cluster
                 ${_dp_pkg_port_base}
                 "${PROJECT_SOURCE_DIR}:${CMAKE_BINARY_DIR}"
                 ${DP_SLURM_CONF_DIR}/plugstack.conf.d/slurm-dp.conf
                 ${_dp_pkg_plugin})
set_tests_properties(e2e.own.packaging.install_run_purge_deb PROPERTIES
  LABELS "e2e;debian13;debian-testing" FIXTURES_REQUIRED dp_packages TIMEOUT 900 RUN_SERIAL ON)
