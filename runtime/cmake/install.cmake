# Installs libdp as a package (component "libdp"): the library, its public
# headers, a CMake package (find_package(slurm-dp) -> slurm-dp::dp) and a
# pkg-config file (slurm-dp.pc).
include(CMakePackageConfigHelpers)

set(DP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/slurm-dp)

install(TARGETS dp EXPORT slurm-dp-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT libdp
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES
  ${PROJECT_SOURCE_DIR}/runtime/include/dp/dp.h
  ${PROJECT_SOURCE_DIR}/runtime/include/dp/context.hpp
  ${PROJECT_SOURCE_DIR}/runtime/include/dp/communicator.hpp
  # The contracts libdp shares with the plugin and the rest of the tree.
  ${PROJECT_SOURCE_DIR}/core/include/dp/result.hpp
  ${PROJECT_SOURCE_DIR}/core/include/dp/env_names.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dp COMPONENT libdp)
install(EXPORT slurm-dp-targets NAMESPACE slurm-dp:: DESTINATION ${DP_CMAKE_DIR} COMPONENT libdp)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/slurm-dpConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/slurm-dpConfig.cmake INSTALL_DESTINATION ${DP_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/slurm-dpConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/slurm-dpConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/slurm-dpConfigVersion.cmake
  DESTINATION ${DP_CMAKE_DIR} COMPONENT libdp)

# pkg-config: prefix is resolved at install time so `cmake --install --prefix` works.
install(CODE "
  set(CMAKE_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${CMAKE_CURRENT_LIST_DIR}/slurm-dp.pc.in\"
                 \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/slurm-dp.pc\" @ONLY)
" COMPONENT libdp)
