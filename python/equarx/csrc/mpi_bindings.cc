// equarx Python bindings — a Communicator over an MPI communicator given by its handle
// (mpi4py: MPI._handleof(comm)). Built only with EQUARX_ENABLE_MPI; the library duplicates
// the communicator, so equarx's messages never mix with the caller's.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <type_traits>

#include "common.h"
#include "equarx/mpi.h"

namespace equarx::py {
namespace {

// MPI_Comm is a pointer in Open MPI and an int in MPICH; mpi4py hands either as an integer.
template <typename C>
C CommFromHandle(uintptr_t h) {
  if constexpr (std::is_pointer_v<C>) return reinterpret_cast<C>(h);
  else return static_cast<C>(h);
}

}  // namespace

void BindMpi(nb::module_& m) {
  m.def(
      "mpi_communicator",
      [](uintptr_t handle) {
        int initialized = 0, finalized = 0;
        MPI_Initialized(&initialized);
        MPI_Finalized(&finalized);
        if (!initialized || finalized)
          ThrowInvalid("MPI is not initialized (import mpi4py.MPI first) or already finalized");
        MPI_Comm comm = CommFromHandle<MPI_Comm>(handle);
        if (comm == MPI_COMM_NULL) ThrowInvalid("the MPI communicator is MPI_COMM_NULL");
        std::unique_ptr<Communicator> c;
        {
          nb::gil_scoped_release nogil;  // collective over comm
          Check(CreateMpiCommunicator(comm, &c));
        }
        return new PyComm(std::move(c));
      },
      nb::arg("handle"), nb::rv_policy::take_ownership);
}

}  // namespace equarx::py
