// equarx communicators over MPI (include/equarx/mpi.h). Built only with EQUARX_ENABLE_MPI.
#ifdef EQUARX_HAVE_MPI
#include "equarx/mpi.h"

#include "common/env.h"
#include "transport/mpi/mpi_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/socket/socket_transport.h"

namespace equarx {

const char* DataPathName(DataPath path) {
  switch (path) {
    case DataPath::kMpi: return "mpi";
    case DataPath::kSockets: return "sockets";
    case DataPath::kSharedMemory: return "shm";
  }
  return "?";
}

Status MpiCommunicatorOptions::FromEnvironment(MpiCommunicatorOptions* out) {
  const env::Settings s = env::Read();
  MpiCommunicatorOptions o;
  if (s.data_path == "sockets") {
    o.data_path = DataPath::kSockets;
  } else if (s.data_path == "mpi") {
    o.data_path = DataPath::kMpi;
  } else if (s.data_path == "shm") {
    o.data_path = DataPath::kSharedMemory;
  } else {
    return InvalidArgument("EQUARX_DATA_PATH='" + s.data_path + "': expected sockets, shm or mpi");
  }
  o.socket_interface = s.socket_ifname;
  *out = o;
  return Status::Ok();
}

Status CreateMpiCommunicator(MPI_Comm comm, std::unique_ptr<Communicator>* out) {
  MpiCommunicatorOptions o;
  Status st = MpiCommunicatorOptions::FromEnvironment(&o);
  // Every rank must take part in the collective checks below even when its own environment
  // is wrong, or the others would wait: report the error after agreeing on it.
  int bad = st.ok() ? 0 : 1, any_bad = 0;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized && comm != MPI_COMM_NULL) MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);
  if (!st.ok()) return st;
  if (any_bad) return InvalidArgument("EQUARX_DATA_PATH is malformed on another rank");
  return CreateMpiCommunicator(comm, o, out);
}

Status CreateMpiCommunicator(MPI_Comm comm, const MpiCommunicatorOptions& options,
                             std::unique_ptr<Communicator>* out) {
  if (!out) return InvalidArgument("CreateMpiCommunicator: out is null");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return InvalidArgument("MPI is not initialized");
  if (comm == MPI_COMM_NULL) return InvalidArgument("communicator is MPI_COMM_NULL");
  int path[2] = {int(options.data_path), -int(options.data_path)}, agreed[2] = {0, 0};
  MPI_Allreduce(path, agreed, 2, MPI_INT, MPI_MAX, comm);
  if (agreed[0] != -agreed[1])
    return InvalidArgument("ranks asked for different data paths (EQUARX_DATA_PATH differs?)");
  std::unique_ptr<transport::Transport> t;
  if (options.data_path == DataPath::kMpi) {
    EQUARX_RETURN_IF_ERROR(transport::CreateMpiTransport(comm, &t));
  } else {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    auto allgather = [comm](const void* mine, size_t bytes, void* all) {
      int rc = MPI_Allgather(mine, int(bytes), MPI_BYTE, all, int(bytes), MPI_BYTE, comm);
      if (rc != MPI_SUCCESS) return RemoteError("MPI_Allgather failed during the data path's set-up");
      return Status::Ok();
    };
    Status st;
    if (options.data_path == DataPath::kSharedMemory) {
      st = transport::CreateShmTransport(rank, size, allgather, transport::ShmOptions{}, &t);
    } else {
      transport::SocketOptions so;
      so.interface = options.socket_interface;
      so.setup_timeout_ms = options.setup_timeout_ms;
      st = transport::CreateSocketTransport(rank, size, allgather, so, &t);
    }
    // Agree on the outcome, so that a rank that failed to connect does not leave the others
    // holding a half-built mesh.
    int ok = st.ok() ? 1 : 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!st.ok()) return st;
    if (!all_ok) return RemoteError("data path set-up failed on another rank");
  }
  *out = std::make_unique<Communicator>(std::move(t));
  return Status::Ok();
}

}  // namespace equarx
#endif
