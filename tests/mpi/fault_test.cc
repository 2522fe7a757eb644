// Fault test under mpirun: rank `victim` SIGKILLs or SIGSTOPs itself in the middle of a run
// of large AllReduces. Every surviving rank must return a timeout or remote-error status
// within the deadline (plus slack) instead of hanging, and the next call on its communicator
// must fail at once, saying that the communicator is unusable. Each survivor prints
//   FAULT rank=R status=CODE call_ms=T elapsed_ms=E deadline_ms=D message="..."
//   LATER rank=R status=CODE call_ms=T message="..."
// (call_ms: the failing call alone; elapsed_ms: from the first call after the good one), and
// a stopping victim prints VICTIM pid=P first; run_fault_test.sh checks them. Survivors then
// end the job as every tool does (tools::EndJobIfFailed: MPI_Abort, which also takes a
// stopped victim down); MPI_Finalize with a dead or stopped peer is not required to return.
// In mode stop-idle the victim stops between collectives instead, and the survivors' next
// step is a tool's own MPI barrier (tools::MpiBarrier, deadline DEADLINE_MS), which must end
// the job rather than wait for it.
//
// Usage: mpi_fault_test VICTIM DEADLINE_MS [kill|stop|stop-idle]
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "equarx/mpi.h"
#include "job.h"

namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;  // the victim calls MPI from a helper thread (one thread at a time)
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int victim = argc > 1 ? std::atoi(argv[1]) : size - 1;
  const uint32_t deadline_ms = argc > 2 ? uint32_t(std::atoi(argv[2])) : 3000;
  const std::string mode = argc > 3 ? argv[3] : "kill";
  const bool stop = mode != "kill";
  std::unique_ptr<equarx::Communicator> comm;
  if (!equarx::CreateMpiCommunicator(MPI_COMM_WORLD, &comm).ok()) return 2;

  const size_t count = size_t(8) << 20;  // 32 MiB of f32: each call takes a while
  std::vector<float> x(count, 1.0f), y(count);
  equarx::AllReduceOptions o;
  o.timeout_ms = deadline_ms;
  o.algorithm = equarx::Algorithm::kFull;
  // One good call first, so every rank is known to be in the collective phase.
  equarx::Status st = comm->AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o);
  if (!st.ok()) {
    std::printf("FAULT rank=%d setup-failed %s\n", rank, st.ToString().c_str());
    std::fflush(stdout);
    _exit(3);
  }
  if (rank == victim && stop) {
    std::printf("VICTIM pid=%d\n", int(getpid()));
    std::fflush(stdout);
  }
  if (mode == "stop-idle") {
    if (rank == victim) raise(SIGSTOP);
    const auto b0 = std::chrono::steady_clock::now();
    equarx::tools::MpiBarrier(MPI_COMM_WORLD, int(deadline_ms));
    std::printf("BARRIER rank=%d completed after %.0f ms\n", rank, MsSince(b0));  // must not happen
    std::fflush(stdout);
    _exit(1);
  }
  if (rank == victim) {
    // Die or freeze in the middle of the next call: run it on a helper thread, signal the
    // process while the data is moving.
    std::thread t([&] { (void)comm->AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o); });
    usleep(30000);
    raise(stop ? SIGSTOP : SIGKILL);
    t.join();
    _exit(4);  // not reached while stopped: mpirun kills the job first
  }
  const auto t0 = std::chrono::steady_clock::now();
  double call_ms = 0;
  for (int i = 0; i < 50 && st.ok(); ++i) {
    const auto c0 = std::chrono::steady_clock::now();
    st = comm->AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o);
    call_ms = MsSince(c0);
  }
  std::printf("FAULT rank=%d status=%s call_ms=%.0f elapsed_ms=%.0f deadline_ms=%u message=\"%s\"\n", rank,
              std::string(equarx::StatusCodeName(st.code())).c_str(), call_ms, MsSince(t0), deadline_ms,
              st.message().c_str());
  // A failed communicator must say so at once on every later call.
  const auto l0 = std::chrono::steady_clock::now();
  equarx::Status later = comm->AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o);
  std::printf("LATER rank=%d status=%s call_ms=%.0f message=\"%s\"\n", rank,
              std::string(equarx::StatusCodeName(later.code())).c_str(), MsSince(l0), later.message().c_str());
  std::fflush(stdout);
  equarx::tools::EndJobIfFailed(*comm);
  _exit(st.ok() ? 1 : 5);  // only if the communicator did not fail: never a silent success
}
