# Optional replay backends: each is its own library, linked into sp-opt when its dependencies
# were found, and announced to the app by a compile definition (app/backends.cpp).
if(MPI_C_FOUND)
  add_library(spopt_mpi STATIC lib/runtime/mpi/mpi_backend.cpp)
  target_link_libraries(spopt_mpi PUBLIC spopt MPI::MPI_C)
  target_compile_definitions(spopt_mpi PUBLIC SPOPT_HAVE_MPI)
  # The C API only: skip the deprecated C++ bindings that mpi.h pulls in for C++ code.
  target_compile_definitions(spopt_mpi PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  # sp-opt is defined after this file is included: link once the directory is processed.
  cmake_language(DEFER CALL target_link_libraries sp-opt PRIVATE spopt_mpi)
endif()

# The nccl backend: CUDA toolkit + NCCL (cmake/Nccl.cmake says why it is skipped when it is).
include(${CMAKE_CURRENT_LIST_DIR}/Nccl.cmake)
