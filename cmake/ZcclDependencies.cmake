# Finds every external dependency and fails with the Debian package to install.
# Sets ZCCL_DEP_TARGETS (imported targets the library links) and
# ZCCL_DEP_LINK_FILES (the same as files/flags, for the static library).

set(ZCCL_INSTALL_HINT "run scripts/install-deps.sh, or apt-get install")

find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "zccl needs pkg-config: ${ZCCL_INSTALL_HINT} pkg-config")
endif()
find_package(Threads REQUIRED)

# zccl_find_pkg(<prefix> <pkg-config module> <Debian package>)
function(zccl_find_pkg prefix module debpkg)
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET GLOBAL ${module})
  if(NOT ${prefix}_FOUND)
    message(FATAL_ERROR "zccl needs ${module} (pkg-config module '${module}' not found): "
                        "${ZCCL_INSTALL_HINT} ${debpkg}")
  endif()
  message(STATUS "zccl: found ${module} ${${prefix}_VERSION}")
  set(${prefix}_LINK_LIBRARIES "${${prefix}_LINK_LIBRARIES}" PARENT_SCOPE)
endfunction()

zccl_find_pkg(ZCCL_UCX ucx libucx-dev)
zccl_find_pkg(ZCCL_PMIX pmix libpmix-dev)
zccl_find_pkg(ZCCL_HWLOC hwloc libhwloc-dev)
zccl_find_pkg(ZCCL_IBVERBS libibverbs libibverbs-dev)
zccl_find_pkg(ZCCL_RDMACM librdmacm librdmacm-dev)
# HMAC-SHA256 for the unique id's challenge-response (src/bootstrap/zb_tcp.c).
zccl_find_pkg(ZCCL_CRYPTO libcrypto libssl-dev)
# The stream codec's chunk checksums (XXH3, docs/format.md).
zccl_find_pkg(ZCCL_XXHASH libxxhash libxxhash-dev)

find_package(zfp CONFIG QUIET)
if(NOT zfp_FOUND)
  message(FATAL_ERROR "zccl needs libzfp (CMake package 'zfp' not found): ${ZCCL_INSTALL_HINT} libzfp-dev")
endif()
get_target_property(ZCCL_ZFP_LOCATION zfp::zfp LOCATION)
message(STATUS "zccl: found zfp ${zfp_VERSION}")

set(ZCCL_DEP_TARGETS PkgConfig::ZCCL_UCX PkgConfig::ZCCL_PMIX PkgConfig::ZCCL_HWLOC
                     PkgConfig::ZCCL_IBVERBS PkgConfig::ZCCL_CRYPTO PkgConfig::ZCCL_XXHASH zfp::zfp Threads::Threads)
set(ZCCL_DEP_LINK_FILES ${ZCCL_UCX_LINK_LIBRARIES} ${ZCCL_PMIX_LINK_LIBRARIES}
                        ${ZCCL_HWLOC_LINK_LIBRARIES} ${ZCCL_IBVERBS_LINK_LIBRARIES} ${ZCCL_CRYPTO_LINK_LIBRARIES}
                        ${ZCCL_XXHASH_LINK_LIBRARIES}
                        ${ZCCL_ZFP_LOCATION} Threads::Threads m)
if(ZCCL_HAVE_CUDA)
  # The static runtime: libzccl loads on machines without libcudart.so and
  # reports "no device" at run time instead of failing to load.
  list(APPEND ZCCL_DEP_TARGETS CUDA::cudart_static)
  get_target_property(ZCCL_CUDART_LOCATION CUDA::cudart_static LOCATION)
  # nvcc emits C++ (static-init guards, EH personality): static users need libstdc++.
  list(APPEND ZCCL_DEP_LINK_FILES ${ZCCL_CUDART_LOCATION} stdc++ dl rt)
  set(ZCCL_PC_CUDA_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lstdc++ -ldl -lrt")
endif()

# Used by tools, tests and benchmarks (not by the library), and by
# libzccl-mpi.so (mpi/), which is built against this MPI.
zccl_find_pkg(ZCCL_NETCDF netcdf libnetcdf-dev)
find_package(MPI COMPONENTS C QUIET)
if(NOT MPI_C_FOUND)
  message(FATAL_ERROR "zccl's tests and benchmarks need MPI: ${ZCCL_INSTALL_HINT} libopenmpi-dev openmpi-bin")
endif()
find_program(ZCCL_MPIEXEC NAMES mpirun mpiexec REQUIRED)
