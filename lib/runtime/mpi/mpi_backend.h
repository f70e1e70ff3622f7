#pragma once
// The `mpi` backend: one process per rank under mpirun; rank i of MPI_COMM_WORLD runs program i.
// One MPI communicator per ring (MPI_Comm_split in the group's rank order). Every collective first
// exchanges a small header (kind, dtype, count, op) so a mismatch is an error, then moves the data
// with non-blocking MPI calls polled against the timeout. Reductions gather the members' inputs
// and add them in group order: the same bits as the local backend.
#include <memory>

#include "runtime/communicator.h"

namespace spopt::rt {

std::unique_ptr<Backend> makeMpiBackend(const BackendOptions& opts);

}  // namespace spopt::rt
