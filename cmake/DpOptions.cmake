# Build switches. One line each, default next to the name.
set(DP_WITH_CUDA AUTO CACHE STRING "Build the CUDA/NCCL paths: AUTO|ON|OFF")
set_property(CACHE DP_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
option(DP_SANITIZE "Build everything with ASan+UBSan" OFF)
option(DP_BUILD_TESTS "Build the test suite" ON)
# CI's plain build runs only the e2e tests and benchmark smokes (the unit
# tests run in its sanitizer build): OFF leaves tests/unit out of it.
option(DP_UNIT_TESTS "Build the unit tests (tests/unit) with the test suite" ON)
set(DP_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures (no GPU here, so never 'native')")

# Warnings are errors in our own code only: apply per target, never globally,
# so generated protobuf code and third-party headers do not break the build.
function(dp_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Werror>)
endfunction()

# Source paths in __FILE__ and std::source_location (error trails) are
# relative to the tree, so messages never show where it was built.
# Ninja names sources relative to the build folder ("../core/..."), Makefiles
# by absolute path: map both. (ccache's base_dir turns a Makefile build's
# paths into "../../../core/...": dp::detail::tree_path drops those "../".)
file(RELATIVE_PATH _dp_src_from_build ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR})
string(REGEX REPLACE "/$" "" _dp_src_from_build "${_dp_src_from_build}")
add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fmacro-prefix-map=${PROJECT_SOURCE_DIR}/=>)
if(_dp_src_from_build)
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fmacro-prefix-map=${_dp_src_from_build}/=>)
endif()

if(DP_SANITIZE)
  # -O0 with line tables: reports still name file and line. CI's sanitizer
  # build is always a cold one, and the unit tests wait more than they
  # compute: measured (unity build, Ninja), -O1 built in 398 s and tested in
  # 160 s, -O0 in 245 s and 179 s.
  foreach(lang C CXX)
    set(CMAKE_${lang}_FLAGS_RELWITHDEBINFO "-O0 -g1 -DNDEBUG")
  endforeach()
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
