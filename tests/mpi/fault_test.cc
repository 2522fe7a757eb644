// Fault test under mpirun: rank `victim` SIGKILLs itself in the middle of a run of large
// AllReduces. Every surviving rank must return a timeout or remote-error status within the
// deadline (plus slack) instead of hanging. Each survivor prints one line
//   FAULT rank=R status=CODE elapsed_ms=T deadline_ms=D
// which run_fault_test.sh checks. Survivors leave with _exit: MPI_Finalize with a dead peer
// is not required to return.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "equarx/mpi.h"

int main(int argc, char** argv) {
  int provided = 0;  // the victim calls MPI from a helper thread (one thread at a time)
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int victim = argc > 1 ? std::atoi(argv[1]) : size - 1;
  const uint32_t deadline_ms = argc > 2 ? uint32_t(std::atoi(argv[2])) : 3000;
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
  if (rank == victim) {
    // Die in the middle of the next call: run it on a helper thread, kill the process
    // while the data is moving.
    std::thread t([&] { (void)comm->AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o); });
    usleep(30000);
    raise(SIGKILL);
    t.join();
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 50 && st.ok(); ++i)
    st = comm->AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("FAULT rank=%d status=%s elapsed_ms=%.0f deadline_ms=%u message=\"%s\"\n", rank,
              std::string(equarx::StatusCodeName(st.code())).c_str(), ms, deadline_ms,
              st.message().c_str());
  std::fflush(stdout);
  _exit(st.ok() ? 1 : 0);
}
