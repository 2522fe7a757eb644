// equarx MPI transport (see mpi_transport.h).
#include "transport/mpi/mpi_transport.h"

#include <chrono>
#include <climits>
#include <new>
#include <string>
#include <thread>

namespace equarx::transport {
namespace {

struct MpiReq {
  MPI_Request req = MPI_REQUEST_NULL;
  int peer = 0;
  int sending = 0;
  int done = 0;
  int error = MPI_SUCCESS;
  size_t bytes = 0;   // a receive: what it expects
  long got = -1;      // a receive of another length: what came (-1: longer than expected)
  bool length = false;
};
static_assert(sizeof(MpiReq) <= sizeof(Request::state), "Request storage too small");

MpiReq* AsReq(Request* r) { return std::launder(reinterpret_cast<MpiReq*>(r->state)); }

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, size_t(len));
}

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, int rank, int size, int tag_ub)
      : comm_(comm), rank_(rank), size_(size), tag_ub_(tag_ub) {}
  ~MpiTransport() override { MPI_Comm_free(&comm_); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override {
    EQUARX_RETURN_IF_ERROR(Check(peer, bytes, "send to"));
    MpiReq* r = new (req->state) MpiReq();
    r->peer = peer;
    r->sending = 1;
    bytes_sent_ += bytes;
    int rc = MPI_Isend(buf, int(bytes), MPI_BYTE, peer, Tag(tag), comm_, &r->req);
    if (rc != MPI_SUCCESS) return RemoteError("MPI_Isend to rank " + std::to_string(peer) + ": " + MpiError(rc));
    return Status::Ok();
  }

  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override {
    EQUARX_RETURN_IF_ERROR(Check(peer, bytes, "receive from"));
    MpiReq* r = new (req->state) MpiReq();
    r->peer = peer;
    r->bytes = bytes;
    int rc = MPI_Irecv(buf, int(bytes), MPI_BYTE, peer, Tag(tag), comm_, &r->req);
    if (rc != MPI_SUCCESS) return RemoteError("MPI_Irecv from rank " + std::to_string(peer) + ": " + MpiError(rc));
    return Status::Ok();
  }

  Status Wait(Request* req, Deadline deadline) override {
    MpiReq* r = AsReq(req);
    // Poll: MPI_Wait cannot time out. Spin briefly (low latency), then yield the core.
    for (unsigned spins = 0; !r->done; ++spins) {
      Poll(r);
      if (r->done) break;
      if ((spins & 63) == 63 && Clock::now() >= deadline)
        return WaitTimedOut(r->sending != 0, r->peer);
      if (spins > 1024) std::this_thread::yield();
    }
    return ResultOf(r);
  }

  bool Test(Request* req, Status* status) override {
    MpiReq* r = AsReq(req);
    Poll(r);
    if (!r->done) return false;
    *status = ResultOf(r);
    return true;
  }

  void Cancel(Request* req) override {
    MpiReq* r = AsReq(req);
    if (r->done || r->req == MPI_REQUEST_NULL) return;
    MPI_Cancel(&r->req);
    MPI_Request_free(&r->req);
    r->done = 1;
  }

  uint64_t bytes_sent() const override { return bytes_sent_; }

 private:
  Status Check(int peer, size_t bytes, const char* what) const {
    if (peer < 0 || peer >= size_) return InvalidArgument(std::string(what) + " rank out of range");
    if (bytes > size_t(INT_MAX))
      return Unsupported("a single message of " + std::to_string(bytes) +
                         " bytes exceeds MPI's 2 GiB count; use more microshards");
    return Status::Ok();
  }
  // Our 64-bit tags carry the call number in the high half; MPI tags are at least 15 bits
  // (MPI_TAG_UB, 2^31-1 in Open MPI). Keep the low bits of both halves; MPI matches in order
  // per (source, tag), so the rare reuse of a value is still correct.
  int Tag(uint64_t tag) const {
    const uint64_t call = tag >> 32, local = tag & 0xFFFFFF;
    const uint64_t t = ((call & 0x7F) << 24) | local;
    return int(t % (uint64_t(tag_ub_) + 1));
  }
  void Poll(MpiReq* r) {
    if (r->done) return;
    int flag = 0;
    MPI_Status st;
    int rc = MPI_Test(&r->req, &flag, &st);
    // A message longer than the receive (truncated) or shorter is a length mismatch, as on
    // every transport.
    int err_class = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &err_class);
    if (rc != MPI_SUCCESS && err_class != MPI_ERR_TRUNCATE) {
      r->done = 1;
      r->error = rc;
      return;
    }
    if (!flag && rc == MPI_SUCCESS) return;
    r->done = 1;
    if (!r->sending) {
      int n = 0;
      MPI_Get_count(&st, MPI_BYTE, &n);
      r->length = err_class == MPI_ERR_TRUNCATE || size_t(n) != r->bytes;
      r->got = err_class == MPI_ERR_TRUNCATE ? -1 : long(n);
    }
  }
  static Status ResultOf(const MpiReq* r) {
    if (r->length)
      return r->got < 0 ? Mismatch("message length mismatch with rank " + std::to_string(r->peer) +
                                   ": more bytes sent than the " + std::to_string(r->bytes) + " expected")
                        : LengthMismatch(r->peer, size_t(r->got), r->bytes);
    if (r->error == MPI_SUCCESS) return Status::Ok();
    return RemoteError(std::string(r->sending ? "send to" : "receive from") + " rank " +
                       std::to_string(r->peer) + " failed: " + MpiError(r->error));
  }

  MPI_Comm comm_;
  int rank_, size_, tag_ub_;
  uint64_t bytes_sent_ = 0;
};

}  // namespace

Status WaitSetupStep(MPI_Request* req, Deadline deadline, int budget_ms, const std::string& what) {
  const Deadline t0 = Clock::now();
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return RemoteError(what + " failed during set-up: " + MpiError(rc));
    if (done) return Status::Ok();
    const Deadline now = Clock::now();
    if (now >= deadline)
      return Timeout(what + " did not complete within the set-up deadline (" + std::to_string(budget_ms) +
                     " ms): a rank has not reached this step, or has died or stopped; the MPI "
                     "communicator must not be used for collectives again");
    // Spin for the first few ms (set-up steps usually finish fast), then sleep briefly.
    if (now - t0 > std::chrono::milliseconds(5)) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

Status CreateMpiTransport(MPI_Comm comm, std::unique_ptr<Transport>* out, Deadline deadline, int budget_ms) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return InvalidArgument("MPI is not initialized");
  if (comm == MPI_COMM_NULL) return InvalidArgument("communicator is MPI_COMM_NULL");
  // On the heap: after a timeout the pending duplication may still write it (leaked then).
  auto* dup = new MPI_Comm(MPI_COMM_NULL);
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_Comm_idup(comm, dup, &req);
  if (rc != MPI_SUCCESS) {
    delete dup;
    return RemoteError("MPI_Comm_idup: " + MpiError(rc));
  }
  Status st = WaitSetupStep(&req, deadline, budget_ms, "MPI_Comm_idup (the data path's communicator)");
  if (!st.ok()) return st;  // `dup` leaked on purpose: MPI may still complete into it
  MPI_Comm c = *dup;
  delete dup;
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int rank = 0, size = 0, flag = 0;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  int* ub = nullptr;
  MPI_Comm_get_attr(c, MPI_TAG_UB, &ub, &flag);
  const int tag_ub = (flag && ub) ? *ub : 32767;
  *out = std::make_unique<MpiTransport>(c, rank, size, tag_ub);
  return Status::Ok();
}

}  // namespace equarx::transport
