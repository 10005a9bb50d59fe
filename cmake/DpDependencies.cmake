# Every external dependency is found here, once. See NOTES-slurm-and-deps.md
# for why each is found the way it is.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(Protobuf REQUIRED)            # Debian ships only the FindProtobuf module
pkg_check_modules(LIBEVENT REQUIRED IMPORTED_TARGET libevent_core)
find_package(Gloo CONFIG REQUIRED)         # imported target: gloo
find_package(ZLIB REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)  # imported target OpenSSL::Crypto (libcrypto)
# The step report (daemon/step_report.cpp) and srun's report file: header-only.
find_package(nlohmann_json 3.10 REQUIRED)  # imported target nlohmann_json::nlohmann_json

find_path(SLURM_INCLUDE_DIR slurm/spank.h REQUIRED)
find_library(SLURM_LIBRARY slurm REQUIRED)  # only for tools/tests; the plugin links nothing from Slurm
# slurm_version.h has only SLURM_VERSION_NUMBER (0xMMmmuu).
file(STRINGS ${SLURM_INCLUDE_DIR}/slurm/slurm_version.h _slurm_ver REGEX "#define SLURM_VERSION_NUMBER")
string(REGEX MATCH "0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])" _m "${_slurm_ver}")
math(EXPR _maj "0x${CMAKE_MATCH_1}")
math(EXPR _min "0x${CMAKE_MATCH_2}")
math(EXPR _mic "0x${CMAKE_MATCH_3}")
if(_min LESS 10)
  set(_min "0${_min}")
endif()
set(DP_SLURM_VERSION "${_maj}.${_min}.${_mic}" CACHE INTERNAL "Slurm version the plugin is built against")
message(STATUS "slurm-dp: building against Slurm ${DP_SLURM_VERSION}")

set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread REQUIRED)

# CUDA: AUTO builds it when nvcc, nccl.h and libnccl.so are all present, ON
# insists, OFF skips. AUTO never drops CUDA quietly where part of it is
# installed (say a runtime libnccl.so.2 without the headers): it warns,
# naming what is missing, since a CPU-only build on a GPU node is a silent
# 10-100x slowdown for every user of the package.
set(DP_HAVE_CUDA OFF)
if(NOT DP_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  set(_cuda_root /usr/local/cuda)
  if(CMAKE_CUDA_COMPILER)
    get_filename_component(_cuda_root "${CMAKE_CUDA_COMPILER}" DIRECTORY)  # <root>/bin
    get_filename_component(_cuda_root "${_cuda_root}" DIRECTORY)
  endif()
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_cuda_root}/include /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl HINTS ${_cuda_root}/lib64 ${_cuda_root}/lib /usr/local/cuda/lib64)
  find_library(NCCL_RUNTIME NAMES libnccl.so.2 HINTS ${_cuda_root}/lib64 ${_cuda_root}/lib /usr/local/cuda/lib64)
  set(_missing "")
  if(NOT CMAKE_CUDA_COMPILER)
    list(APPEND _missing "nvcc (the CUDA toolkit)")
  endif()
  if(NOT NCCL_INCLUDE_DIR)
    list(APPEND _missing "nccl.h")
  endif()
  if(NOT NCCL_LIBRARY)
    list(APPEND _missing "libnccl.so (the development link)")
  endif()
  if(_missing STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES ${DP_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(DP_HAVE_CUDA ON)
    set(DP_CUDA_VERSION "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}" CACHE INTERNAL "CUDA series, package-name form")
    add_library(dp_nccl INTERFACE)
    target_include_directories(dp_nccl SYSTEM INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(dp_nccl INTERFACE ${NCCL_LIBRARY} CUDA::cudart)
  else()
    string(JOIN ", " _missing_text ${_missing})
    if(DP_WITH_CUDA STREQUAL "ON")
      message(FATAL_ERROR "DP_WITH_CUDA=ON but ${_missing_text} not found; install the CUDA toolkit and NCCL's "
                          "development files (libnccl-dev) or use -DDP_WITH_CUDA=OFF")
    elseif(CMAKE_CUDA_COMPILER OR NCCL_INCLUDE_DIR OR NCCL_LIBRARY OR NCCL_RUNTIME)
      message(WARNING "slurm-dp: CUDA is only partly installed here (missing: ${_missing_text}); building "
                      "WITHOUT the GPU path (no NCCL backend, dp-trainer on CPUs only). Install the missing "
                      "parts (libnccl-dev for nccl.h/libnccl.so) or pass -DDP_WITH_CUDA=OFF to silence this.")
    endif()
  endif()
endif()
message(STATUS "slurm-dp: CUDA/NCCL paths ${DP_HAVE_CUDA}")
