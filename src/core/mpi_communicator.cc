// equarx communicators over MPI (include/equarx/mpi.h). Built only with EQUARX_ENABLE_MPI.
#ifdef EQUARX_HAVE_MPI
#include "equarx/mpi.h"

#include "transport/mpi/mpi_transport.h"

namespace equarx {

Status CreateMpiCommunicator(MPI_Comm comm, std::unique_ptr<Communicator>* out) {
  if (!out) return InvalidArgument("CreateMpiCommunicator: out is null");
  std::unique_ptr<transport::Transport> t;
  EQUARX_RETURN_IF_ERROR(transport::CreateMpiTransport(comm, &t));
  *out = std::make_unique<Communicator>(std::move(t));
  return Status::Ok();
}

}  // namespace equarx
#endif
