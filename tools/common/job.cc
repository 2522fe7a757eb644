// equarx tools — never wait on a dead or stopped rank under mpirun (see job.h).
#include "job.h"

#include <errno.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>


namespace equarx::tools {
namespace {

#ifdef EQUARX_HAVE_MPI
bool IsMpiRank() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

[[noreturn]] void EndJob(int rank, const std::string& why, int grace_ms) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: rank %d: %s; ending the job (a peer may be dead or stopped)\n",
               program_invocation_short_name, rank, why.c_str());
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::milliseconds(grace_ms));
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return
}

// Completes `req` or ends the job at the deadline. Spins first (most steps are quick and a
// benchmark's barrier should release every rank at once), then polls every 200 us.
void WaitOrEnd(MPI_Request* req, const char* what, int deadline_ms) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now(), end = t0 + std::chrono::milliseconds(deadline_ms);
  for (;;) {
    int done = 0;
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    const auto now = Clock::now();
    if (now >= end) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      EndJob(rank, std::string(what) + " did not complete within " + std::to_string(deadline_ms) + " ms", 1000);
    }
    if (now - t0 > std::chrono::milliseconds(10)) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}
#endif

}  // namespace

void EndJobIfFailed(const Communicator& comm, int grace_ms) {
  if (comm.failure().ok()) return;
#ifdef EQUARX_HAVE_MPI
  if (IsMpiRank()) EndJob(comm.rank(), comm.failure().ToString(), grace_ms);
#else
  (void)grace_ms;
#endif
}

#ifdef EQUARX_HAVE_MPI
int MpiStepDeadlineMs() {
  const uint64_t twice = 2 * uint64_t(ResolveOptions(AllReduceOptions{}).timeout_ms);
  return int(std::clamp<uint64_t>(twice, 10000, FindOptionField("timeout_ms")->max));  // the option's range
}

void MpiBarrier(MPI_Comm comm, int deadline_ms) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  WaitOrEnd(&r, "MPI_Barrier", deadline_ms);
}

void MpiAllreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                  int deadline_ms) {
  MPI_Request r;
  MPI_Iallreduce(send, recv, count, type, op, comm, &r);
  WaitOrEnd(&r, "MPI_Allreduce", deadline_ms);
}

void MpiBcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm, int deadline_ms) {
  MPI_Request r;
  MPI_Ibcast(buf, count, type, root, comm, &r);
  WaitOrEnd(&r, "MPI_Bcast", deadline_ms);
}
#endif

}  // namespace equarx::tools
