// equarx tools — worlds (see world.h).
#include "world.h"

#include <barrier>
#include <chrono>
#include <latch>
#include <mutex>
#include <thread>

#ifdef EQUARX_HAVE_MPI
#include <mpi.h>

#include "equarx/mpi.h"
#include "job.h"
#endif

namespace equarx::tools {
namespace {

// Shared state of an in-process world: a barrier and a staging area for reductions.
struct Shared {
  explicit Shared(int n) : barrier(n), slots(size_t(n)) {}
  std::barrier<> barrier;
  std::vector<std::vector<double>> slots;
  std::vector<uint64_t> bcast{0};
};

class ThreadWorld final : public World {
 public:
  ThreadWorld(Shared* s, Communicator* c) : s_(s), c_(c) {}
  int rank() const override { return c_->rank(); }
  int size() const override { return c_->size(); }
  Communicator& comm() override { return *c_; }
  void Barrier() override { s_->barrier.arrive_and_wait(); }
  void MaxInPlace(double* v, size_t n) override { Reduce(v, n, true); }
  void SumInPlace(double* v, size_t n) override { Reduce(v, n, false); }
  void BroadcastFromRoot(uint64_t* v) override {
    if (rank() == 0) s_->bcast[0] = *v;
    Barrier();
    *v = s_->bcast[0];
    Barrier();
  }
  bool MpiAllreduceF32(const float*, float*, size_t) override { return false; }
  std::string transport() const override { return "inproc"; }

 private:
  void Reduce(double* v, size_t n, bool max) {
    s_->slots[size_t(rank())].assign(v, v + n);
    Barrier();
    for (size_t i = 0; i < n; ++i) {
      double acc = s_->slots[0][i];
      for (int r = 1; r < size(); ++r) {
        const double x = s_->slots[size_t(r)][i];
        acc = max ? (x > acc ? x : acc) : acc + x;  // fixed order: same result on every rank
      }
      v[i] = acc;
    }
    Barrier();
  }
  Shared* s_;
  Communicator* c_;
};

#ifdef EQUARX_HAVE_MPI
class MpiWorld final : public World {
 public:
  MpiWorld(std::unique_ptr<Communicator> c, std::string transport)
      : c_(std::move(c)), transport_(std::move(transport)) {}
  int rank() const override { return c_->rank(); }
  int size() const override { return c_->size(); }
  Communicator& comm() override { return *c_; }
  // The tool's own steps end the job rather than wait forever on a stopped rank (job.h).
  void Barrier() override { MpiBarrier(MPI_COMM_WORLD); }
  void MaxInPlace(double* v, size_t n) override {
    MpiAllreduce(MPI_IN_PLACE, v, int(n), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }
  void SumInPlace(double* v, size_t n) override {
    MpiAllreduce(MPI_IN_PLACE, v, int(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  void BroadcastFromRoot(uint64_t* v) override { MpiBcast(v, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD); }
  bool MpiAllreduceF32(const float* send, float* recv, size_t count) override {
    MPI_Allreduce(send, recv, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    return true;
  }
  std::string transport() const override { return transport_; }

 private:
  std::unique_ptr<Communicator> c_;
  // "mpi", or "mpi+sockets" / "mpi+host" / "mpi+shm" when equarx's own data path moves the data
  // (then "+encrypted" with EQUARX_ENCRYPT=1).
  std::string transport_;
};
#endif

}  // namespace

std::vector<Status> RunOnRanks(int n, const std::function<Status(int rank)>& fn, const RankStart& start) {
  const size_t ranks = size_t(n > 0 ? n : 0);
  std::vector<Status> out(ranks);
  // With `together`, every thread counts down `ready` and waits for `go`; this thread takes
  // the start time once all are ready and then releases them.
  std::latch ready(start.together ? ptrdiff_t(ranks) + 1 : 0), go(start.together ? 1 : 0);
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  auto t0 = std::chrono::steady_clock::now();
  for (size_t r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      if (start.together) {
        ready.count_down();
        go.wait();
      }
      out[r] = fn(int(r));
    });
  if (start.together) {
    ready.arrive_and_wait();
    t0 = std::chrono::steady_clock::now();
    go.count_down();
  }
  for (std::thread& t : threads) t.join();
  if (start.seconds) *start.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::vector<Status> RunOnRanks(std::vector<std::unique_ptr<Communicator>>& comms,
                               const std::function<Status(Communicator&)>& fn, const RankStart& start) {
  return RunOnRanks(int(comms.size()), [&](int r) { return fn(*comms[size_t(r)]); }, start);
}

Status FirstFailure(const std::vector<Status>& ranks, bool name_rank) {
  for (size_t r = 0; r < ranks.size(); ++r)
    if (!ranks[r].ok())
      return name_rank ? Status(ranks[r].code(), "rank " + std::to_string(r) + ": " + ranks[r].message()) : ranks[r];
  return Status::Ok();
}

Status RunInProcess(int ranks, const std::function<void(World&)>& body) {
  std::vector<std::unique_ptr<Communicator>> comms;
  EQUARX_RETURN_IF_ERROR(CreateInProcessGroup(ranks, &comms));
  Shared shared(ranks);
  RunOnRanks(comms, [&](Communicator& c) {
    ThreadWorld w(&shared, &c);
    body(w);
    return Status::Ok();
  });
  return Status::Ok();
}

Status RunMpi(int* argc, char*** argv, const std::function<void(World&)>& body) {
#ifdef EQUARX_HAVE_MPI
  int provided = 0;
  // Only this thread calls MPI (worker threads, such as equarx-gemma3's GEMM threads, never do).
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return Internal("MPI_Init_thread failed");
  std::unique_ptr<Communicator> c;
  Status st = CreateMpiCommunicator(MPI_COMM_WORLD, &c);  // data path from the environment
  MpiCommunicatorOptions o;
  if (st.ok()) st = MpiCommunicatorOptions::FromEnvironment(&o);
  if (st.ok()) {
    MpiWorld w(std::move(c), o.data_path == DataPath::kMpi
                                 ? "mpi"
                                 : std::string("mpi+") + DataPathName(o.data_path) + (o.encrypt ? "+encrypted" : ""));
    body(w);
    MpiBarrier(MPI_COMM_WORLD);  // every rank is alive: MPI_Finalize will return
  }
  MPI_Finalize();
  return st;
#else
  (void)argc;
  (void)argv;
  (void)body;
  return Unsupported("this build has no MPI (configure with EQUARX_ENABLE_MPI=ON)");
#endif
}

}  // namespace equarx::tools
