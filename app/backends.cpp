#include "backends.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/local_backend.h"
#include "support/error.h"
#ifdef SPOPT_HAVE_MPI
#include "runtime/mpi/mpi_backend.h"
#endif
#ifdef SPOPT_HAVE_NCCL
#include "runtime/nccl/nccl_backend.h"
#else
#include <unistd.h>

#include <filesystem>

#include "command.h"
#endif

namespace spopt::app {

std::unique_ptr<rt::Backend> makeBackend(const std::string& name, const rt::BackendOptions& opts) {
  if (name == "local") return rt::makeLocalBackend(opts);
  if (name == "mpi") {
#ifdef SPOPT_HAVE_MPI
    return rt::makeMpiBackend(opts);
#else
    throw InputError("--backend", "", "the mpi backend is not built (MPI was not found when sp-opt was configured)");
#endif
  }
  if (name == "nccl") {
#ifdef SPOPT_HAVE_NCCL
    return rt::makeNcclBackend(opts);
#else
    // The GPU backend is a sibling binary (it links cuBLAS and NCCL): run it with our arguments.
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    auto sibling = self.parent_path() / "sp-opt-nccl";
    if (!ec && std::filesystem::exists(sibling)) {
      std::fflush(nullptr);
      execv(sibling.c_str(), originalArgs().data());
      throw InputError("--backend", "", "cannot run " + sibling.string() + ": " + std::strerror(errno));
    }
    throw InputError("--backend", "", "the nccl backend was not built (CUDA/NCCL not found at configure time)");
#endif
  }
  throw InputError("--backend", "", "unknown backend '" + name + "' (local, mpi, nccl)");
}

int reportCurrentError(rt::Backend& backend) {
  auto report = describeError(std::current_exception());
  return backend.reportError(report.text, report.code);
}

}  // namespace spopt::app
