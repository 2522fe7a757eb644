// equarx communicators over MPI (include/equarx/mpi.h). Built only with EQUARX_ENABLE_MPI.
#ifdef EQUARX_HAVE_MPI
#include "equarx/mpi.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/data_path.h"
#include "core/mpi_setup.h"
#include "transport/mpi/mpi_transport.h"

namespace equarx {
namespace {

using transport::Clock;
using transport::Deadline;

// One set-up step's MPI buffers. On the heap, and leaked when the step times out: MPI may
// still complete the pending collective into them later.
struct StepBuffers {
  std::vector<unsigned char> send, recv;
};

// A bounded MPI_Iallreduce of `n` ints (MPI_MAX or MPI_MIN) for the set-up.
Status SetupAllreduce(const int* mine, int* all, int n, MPI_Op op, MPI_Comm comm, Deadline deadline,
                      int budget_ms, const char* what) {
  auto* b = new StepBuffers;
  b->send.resize(sizeof(int) * size_t(n));
  b->recv.resize(sizeof(int) * size_t(n));
  std::memcpy(b->send.data(), mine, b->send.size());
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_Iallreduce(b->send.data(), b->recv.data(), n, MPI_INT, op, comm, &req);
  if (rc != MPI_SUCCESS) {
    delete b;
    return RemoteError(std::string(what) + ": MPI_Iallreduce failed");
  }
  EQUARX_RETURN_IF_ERROR(transport::WaitSetupStep(&req, deadline, budget_ms, what));  // `b` leaked
  std::memcpy(all, b->recv.data(), b->recv.size());
  delete b;
  return Status::Ok();
}

}  // namespace

Status MpiCommunicatorOptions::FromEnvironment(MpiCommunicatorOptions* out) {
  BootstrapOptions b;  // the same variables, read in one place
  EQUARX_RETURN_IF_ERROR(BootstrapOptions::FromEnvironment(&b));
  MpiCommunicatorOptions o;
  o.data_path = b.data_path;
  o.socket_interface = b.socket_interface;
  o.encrypt = b.encrypt;
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
  if (initialized && comm != MPI_COMM_NULL) {
    const int budget = o.setup_timeout_ms;
    EQUARX_RETURN_IF_ERROR(SetupAllreduce(&bad, &any_bad, 1, MPI_MAX, comm,
                                          Clock::now() + std::chrono::milliseconds(budget), budget,
                                          "MPI_Allreduce (checking every rank's EQUARX_DATA_PATH and EQUARX_ENCRYPT)"));
  }
  if (!st.ok()) return st;
  if (any_bad) return InvalidArgument("EQUARX_DATA_PATH or EQUARX_ENCRYPT is malformed on another rank");
  return CreateMpiCommunicator(comm, o, out);
}

Status CreateMpiCommunicator(MPI_Comm comm, const MpiCommunicatorOptions& options,
                             std::unique_ptr<Communicator>* out) {
  if (!out) return InvalidArgument("CreateMpiCommunicator: out is null");
  std::unique_ptr<transport::Transport> t;
  EQUARX_RETURN_IF_ERROR(internal::CreateMpiTransport(comm, options, &t));
  *out = std::make_unique<Communicator>(std::move(t));
  return Status::Ok();
}

namespace internal {

Status CreateMpiTransport(MPI_Comm comm, const MpiCommunicatorOptions& options,
                          std::unique_ptr<transport::Transport>* out, const SetupHook& hook) {
  if (!out) return InvalidArgument("CreateMpiCommunicator: out is null");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return InvalidArgument("MPI is not initialized");
  if (comm == MPI_COMM_NULL) return InvalidArgument("communicator is MPI_COMM_NULL");
  if (options.setup_timeout_ms <= 0)
    return InvalidArgument("setup_timeout_ms must be positive (got " + std::to_string(options.setup_timeout_ms) + ")");
  // One deadline for the whole set-up: every MPI step and the socket mesh end by it.
  const int budget = options.setup_timeout_ms;
  const Deadline deadline = Clock::now() + std::chrono::milliseconds(budget);
  auto stage = [&hook](const char* name) {
    if (hook) hook(name);
  };
  stage("agree");
  const int enc = options.encrypt ? 1 : 0;
  int path[4] = {int(options.data_path), -int(options.data_path), enc, -enc}, agreed[4] = {0, 0, 0, 0};
  EQUARX_RETURN_IF_ERROR(SetupAllreduce(path, agreed, 4, MPI_MAX, comm, deadline, budget,
                                        "MPI_Allreduce (agreeing on the data path)"));
  if (agreed[0] != -agreed[1])
    return InvalidArgument("ranks asked for different data paths (EQUARX_DATA_PATH differs?)");
  if (agreed[2] != -agreed[3])
    return InvalidArgument("ranks disagree on encrypting the data path (EQUARX_ENCRYPT differs?)");
  if (enc && options.data_path == DataPath::kMpi)
    return InvalidArgument("encryption (EQUARX_ENCRYPT=1) applies to equarx's own TCP connections; data path "
                           "mpi uses MPI's: choose data path host or sockets, or leave encryption off");
  std::unique_ptr<transport::Transport> t;
  if (options.data_path == DataPath::kMpi) {
    stage("dup");
    EQUARX_RETURN_IF_ERROR(transport::CreateMpiTransport(comm, &t, deadline, budget));
  } else {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    // Every all-gather of the set-up, by the stage it begins (internal::SetupHook).
    static const std::vector<const char*> kSocketStages = {"identity", "address"};
    static const std::vector<const char*> kShmStages = {"shm-card", "shm-join"};
    static const std::vector<const char*> kHostStages = {"identity", "address", "host", "shm-card", "shm-join"};
    const bool shm = options.data_path == DataPath::kSharedMemory;
    const std::vector<const char*>& stages =
        shm ? kShmStages : options.data_path == DataPath::kHost ? kHostStages : kSocketStages;
    int gathers = 0;
    bool gather_pending = false;  // an exchange timed out: its collective is still pending
    auto allgather = [comm, size, deadline, budget, &stages, shm, &gathers, &gather_pending, &stage](
                         const void* mine, size_t bytes, void* all) {
      const char* what = stages[std::min<size_t>(size_t(gathers), stages.size() - 1)];
      ++gathers;
      stage(what);
      auto* b = new StepBuffers;
      b->send.assign(static_cast<const unsigned char*>(mine), static_cast<const unsigned char*>(mine) + bytes);
      b->recv.resize(bytes * size_t(size));
      MPI_Request req = MPI_REQUEST_NULL;
      int rc = MPI_Iallgather(b->send.data(), int(bytes), MPI_BYTE, b->recv.data(), int(bytes), MPI_BYTE, comm, &req);
      if (rc != MPI_SUCCESS) {
        delete b;
        return RemoteError("MPI_Allgather failed during the data path's set-up");
      }
      Status waited = transport::WaitSetupStep(&req, deadline, budget,
                                               "MPI_Allgather (data path set-up: " + std::string(what) + ")");
      if (!waited.ok()) {
        gather_pending = true;
        return waited;  // `b` leaked on purpose: MPI may still complete into it
      }
      std::memcpy(all, b->recv.data(), b->recv.size());
      delete b;
      if (!shm && gathers == 2) stage("mesh");
      return Status::Ok();
    };
    transport::SocketOptions so;
    so.interface = options.socket_interface;
    so.encrypt = options.encrypt;
    so.setup_timeout_ms = budget;
    so.setup_deadline = deadline;
    Status st = CreateDataPathTransport(options.data_path, rank, size, allgather, so, &t);
    // A step that timed out left a collective pending on `comm`: no further collective on it.
    if (gather_pending) return st;
    // Agree on the outcome, so that a rank that failed to connect does not leave the others
    // holding a half-built mesh.
    stage("confirm");
    int ok = st.ok() ? 1 : 0, all_ok = 0;
    const Status agreed_outcome = SetupAllreduce(&ok, &all_ok, 1, MPI_MIN, comm, deadline, budget,
                                                 "MPI_Allreduce (agreeing on the outcome of the data path set-up)");
    if (!st.ok()) return st;  // this rank's own error says more than the agreement's
    EQUARX_RETURN_IF_ERROR(agreed_outcome);
    if (!all_ok) return RemoteError("data path set-up failed on another rank");
  }
  *out = std::move(t);
  return Status::Ok();
}

}  // namespace internal
}  // namespace equarx
#endif
