# The nccl replay backend (lib/runtime/nccl/): built when SPOPT_NCCL is ON and both the CUDA
# toolkit and NCCL are found; otherwise one configure message says why and the build goes on
# without it (`--backend nccl` then says it was not built).
#
# NCCL is looked for next to the toolkit (nccl.h in its include dir, libnccl in its library dir),
# then under NCCL_ROOT / $NCCL_HOME. One CUDA runtime, shared: every target links CUDA::cudart.

set(SPOPT_HAVE_NCCL_BACKEND OFF)
if(NOT SPOPT_NCCL)
  message(STATUS "nccl backend: off (SPOPT_NCCL=OFF)")
  return()
endif()

if(SPOPT_SANITIZE OR SPOPT_FUZZ)
  message(STATUS "nccl backend: off (sanitizer and fuzzing builds are host-only)")
  return()
endif()

find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND OR NOT CUDAToolkit_NVCC_EXECUTABLE OR NOT EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
  message(STATUS "nccl backend: skipped (the CUDA toolkit with nvcc was not found; set CUDAToolkit_ROOT)")
  return()
endif()

find_path(SPOPT_NCCL_INCLUDE_DIR nccl.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} ${NCCL_ROOT} $ENV{NCCL_HOME} PATH_SUFFIXES include)
find_library(SPOPT_NCCL_LIBRARY nccl
             HINTS ${CUDAToolkit_LIBRARY_DIR} ${NCCL_ROOT} $ENV{NCCL_HOME} PATH_SUFFIXES lib lib64)
if(NOT SPOPT_NCCL_INCLUDE_DIR OR NOT SPOPT_NCCL_LIBRARY OR NOT TARGET CUDA::cublas)
  message(STATUS "nccl backend: skipped (CUDA ${CUDAToolkit_VERSION} found, but not nccl.h, libnccl or cuBLAS; set NCCL_ROOT)")
  return()
endif()

if(NOT TARGET SPOPT::nccl)
  add_library(SPOPT::nccl SHARED IMPORTED)
  set_target_properties(SPOPT::nccl PROPERTIES IMPORTED_LOCATION "${SPOPT_NCCL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${SPOPT_NCCL_INCLUDE_DIR}")
endif()

# Hopper (H100/H200) unless the user picks: one architecture keeps nvcc builds short.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
if(NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
endif()
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA 20 dialect for nvcc; the .cu files need 17
set(CMAKE_CUDA_STANDARD_REQUIRED ON)

file(GLOB SPOPT_NCCL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/lib/runtime/nccl/*.cpp
     ${PROJECT_SOURCE_DIR}/lib/runtime/nccl/*.cu)
if(NOT TARGET spopt_mpi)
  list(FILTER SPOPT_NCCL_SOURCES EXCLUDE REGEX "nccl_mpi\\.cpp$")
endif()
add_library(spopt_nccl STATIC ${SPOPT_NCCL_SOURCES})
target_link_libraries(spopt_nccl PUBLIC spopt CUDA::cudart CUDA::cublas SPOPT::nccl)
target_compile_definitions(spopt_nccl PUBLIC SPOPT_HAVE_NCCL)
target_compile_options(spopt_nccl PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall --expt-relaxed-constexpr>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${SPOPT_WERROR}>>:--Werror=all-warnings>)
# Under mpirun (one process per GPU, the mpi backend's launch) the NCCL unique ids travel over MPI.
if(TARGET spopt_mpi)
  target_link_libraries(spopt_nccl PRIVATE spopt_mpi MPI::MPI_C)
  target_compile_definitions(spopt_nccl PRIVATE SPOPT_NCCL_WITH_MPI OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
endif()
# Linking cuBLAS and NCCL costs every process ~150 MB of resident memory and 0.1 s of start-up,
# so they live in a sibling binary, sp-opt-nccl, which sp-opt re-executes for `--backend nccl`.
cmake_language(DEFER CALL spopt_add_nccl_binary)
function(spopt_add_nccl_binary)
  add_executable(sp-opt-nccl ${PROJECT_SOURCE_DIR}/app/backends.cpp)
  target_link_libraries(sp-opt-nccl PRIVATE spopt_app spopt_nccl)
  if(TARGET spopt_mpi)
    target_link_libraries(sp-opt-nccl PRIVATE spopt_mpi)
  endif()
  add_dependencies(sp-opt sp-opt-nccl)
endfunction()

# Every CUDA kernel against its CPU kernel on random inputs (scripts/gpu-check.sh runs it).
add_executable(spopt-kernel-parity ${PROJECT_SOURCE_DIR}/tests/gpu/kernel_parity.cpp)
target_link_libraries(spopt-kernel-parity PRIVATE spopt_nccl)

set(SPOPT_HAVE_NCCL_BACKEND ON)
message(STATUS "nccl backend: CUDA ${CUDAToolkit_VERSION}, NCCL ${SPOPT_NCCL_LIBRARY}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
