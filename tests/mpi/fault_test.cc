// Fault test under mpirun: rank VICTIM SIGKILLs or SIGSTOPs itself at a chosen point, and every
// surviving rank must return a timeout or remote-error status within the deadline (plus slack)
// instead of hanging; the next call on its failed communicator must fail at once, saying that
// the communicator is unusable. Points (POINT):
//   setup    during CreateMpiCommunicator's set-up, at one of its stages (internal::SetupHook:
//            agree, dup | agree, identity, address, mesh, confirm), drawn from SEED; the set-up
//            deadline (setup_timeout_ms) is DEADLINE_MS
//   rs, ag   inside a call's reduce-scatter or all-gather: the victim counts its own transport
//            messages (a counting decorator around the transport) and signals itself as it
//            hands message k to the transport, k drawn from SEED in the first half of the
//            call's messages (rs) or the second (ag). The call is `full` without validation:
//            a ring-shaped schedule whose RS and AG send equally many messages, RS first.
//   between  after a completed call, before the next
//   new-shape  inside the first call of a new shape (half the elements) of one_shot with the
//            argument check on, whose check (descriptors, or a power-of-two group's frames)
//            and data every rank sends at once: the victim signals itself at message k of that
//            call, k drawn from SEED (the good call before it is one_shot with the check on too)
//   new-shape-rd  the same with recursive_doubling, whose steps ride in a power-of-two group's
//            check frames
//   random   one of setup, rs, ag and between, drawn from SEED
// Every rank first makes one good call (the victim counts its messages there). Each survivor prints
//   FAULT rank=R where=setup|call status=CODE call_ms=T elapsed_ms=E deadline_ms=D message="..."
//   LATER rank=R status=CODE call_ms=T message="..."     (after a failed call only)
// (call_ms: the failing call or set-up alone; elapsed_ms: from the first call after the good
// one, or from the start of set-up), and the victim prints VICTIM pid=P first, then
// SIGNAL rank=R point=P detail=... just before it signals itself; run_fault_test.sh checks them.
// Survivors then end the job as every tool does (tools::EndJobIfFailed: MPI_Abort, which also
// takes a stopped victim down); MPI_Finalize with a dead or stopped peer is not required to
// return. In mode stop-idle the victim stops between collectives instead, and the survivors'
// next step is a tool's own MPI barrier (tools::MpiBarrier, deadline DEADLINE_MS), which must
// end the job rather than wait for it (POINT is ignored there).
//
// Usage: mpi_fault_test VICTIM DEADLINE_MS [kill|stop|stop-idle] [POINT] [SEED] [ELEMENTS]
//   defaults: kill, rs, seed 1, 1Mi f32 elements per call
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/mpi_setup.h"
#include "equarx/mpi.h"
#include "job.h"
#include "transport/transport.h"

namespace {

using equarx::Status;
namespace transport = equarx::transport;

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "mpi_fault_test: %s\nusage: mpi_fault_test VICTIM DEADLINE_MS [kill|stop|stop-idle] "
               "[setup|rs|ag|between|random] [SEED] [ELEMENTS]\n",
               why);
  std::exit(2);
}

bool ParseU64(const char* s, unsigned long long* v) {
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtoull(s, &end, 10);
  return errno == 0 && *end == 0 && s[0] != '-';
}

// Signals this process (the victim), after saying where; never returns.
[[noreturn]] void Fault(int rank, int sig, const std::string& point, const std::string& detail) {
  std::printf("SIGNAL rank=%d point=%s detail=%s\n", rank, point.c_str(), detail.c_str());
  std::fflush(stdout);
  raise(sig);
  // Only a stopped victim gets here: resumed (mpirun sends SIGCONT before it kills a job's
  // processes). It has played its part; it must not go on as if nothing happened.
  _exit(9);
}

// Forwards everything to the wrapped transport, counting the messages this rank sends; at the
// armed message it signals the process before handing the message on.
class CountingTransport final : public transport::Transport {
 public:
  explicit CountingTransport(std::unique_ptr<transport::Transport> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, transport::Request* req) override {
    if (++sends_ == trigger_) Fault(inner_->rank(), sig_, point_, detail_);
    return inner_->Isend(peer, tag, buf, bytes, req);
  }
  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, transport::Request* req) override {
    return inner_->Irecv(peer, tag, buf, bytes, req);
  }
  Status Wait(transport::Request* req, transport::Deadline d) override { return inner_->Wait(req, d); }
  bool Test(transport::Request* req, Status* st) override { return inner_->Test(req, st); }
  void Cancel(transport::Request* req) override { inner_->Cancel(req); }
  void Abort(const std::string& why) override { inner_->Abort(why); }
  uint64_t bytes_sent() const override { return inner_->bytes_sent(); }

  uint64_t sends() const { return sends_; }
  void Arm(uint64_t at, int sig, std::string point, std::string detail) {
    trigger_ = at;
    sig_ = sig;
    point_ = std::move(point);
    detail_ = std::move(detail);
  }

 private:
  std::unique_ptr<transport::Transport> inner_;
  uint64_t sends_ = 0, trigger_ = 0;
  int sig_ = 0;
  std::string point_, detail_;
};

[[noreturn]] void EndJob(int rank, const std::string& why) {
  std::fprintf(stderr, "mpi_fault_test: rank %d: %s; ending the job\n", rank, why.c_str());
  std::fflush(stderr);
  usleep(1000 * 1000);  // as tools::EndJobIfFailed: let the other survivors print theirs
  MPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 7) Usage("too many arguments");
  unsigned long long v = 0, seed = 1, elements = 1u << 20;
  int victim = size - 1;
  if (argc > 1) {
    if (!ParseU64(argv[1], &v) || v >= unsigned(size)) Usage("VICTIM must be a rank of the job");
    victim = int(v);
  }
  uint32_t deadline_ms = 3000;
  if (argc > 2) {
    if (!ParseU64(argv[2], &v) || v < 100 || v > 600000) Usage("DEADLINE_MS must be 100..600000");
    deadline_ms = uint32_t(v);
  }
  const std::string mode = argc > 3 ? argv[3] : "kill";
  if (mode != "kill" && mode != "stop" && mode != "stop-idle") Usage(("unknown mode '" + mode + "'").c_str());
  std::string point = argc > 4 ? argv[4] : "rs";
  if (point != "setup" && point != "rs" && point != "ag" && point != "between" && point != "new-shape" &&
      point != "new-shape-rd" && point != "random")
    Usage(("unknown point '" + point + "'").c_str());
  if (argc > 5 && !ParseU64(argv[5], &seed)) Usage("SEED must be a non-negative integer");
  if (argc > 6 && (!ParseU64(argv[6], &elements) || elements < 1024 || elements > (1ull << 28)))
    Usage("ELEMENTS must be 1024..2^28");
  if (size < 2) Usage("needs at least 2 ranks");
  const int sig = mode == "kill" ? SIGKILL : SIGSTOP;
  // The same draws on every rank (only the victim acts on them).
  std::mt19937_64 rng(seed);
  static const char* const kPoints[] = {"setup", "rs", "ag", "between"};
  if (point == "random") point = kPoints[rng() % 4];
  if (mode == "stop-idle") point = "between";
  if (rank == 0) {
    std::printf("POINT point=%s seed=%llu mode=%s ranks=%d victim=%d deadline_ms=%u elements=%llu\n", point.c_str(),
                seed, mode.c_str(), size, victim, deadline_ms, elements);
    std::fflush(stdout);
  }
  if (rank == victim) {
    std::printf("VICTIM pid=%d\n", int(getpid()));
    std::fflush(stdout);
  }

  equarx::MpiCommunicatorOptions mo;
  Status st = equarx::MpiCommunicatorOptions::FromEnvironment(&mo);
  if (!st.ok()) Usage(st.ToString().c_str());
  mo.setup_timeout_ms = int(deadline_ms);
  // Set-up stages at which the victim may signal itself (every one is followed by a wait on it).
  std::vector<std::string> stages =
      mo.data_path == equarx::DataPath::kMpi             ? std::vector<std::string>{"agree", "dup"}
      : mo.data_path == equarx::DataPath::kSharedMemory ? std::vector<std::string>{"agree", "shm-card", "shm-join", "confirm"}
      : mo.data_path == equarx::DataPath::kHost
          ? std::vector<std::string>{"agree", "identity", "address", "mesh", "host", "shm-card", "shm-join", "confirm"}
                                                         : std::vector<std::string>{"agree", "identity", "address", "mesh", "confirm"};
  const std::string setup_stage = stages[rng() % stages.size()];
  equarx::internal::SetupHook hook;
  if (rank == victim && point == "setup")
    hook = [&](const char* stage) {
      if (setup_stage == stage) Fault(rank, sig, point, std::string("stage:") + stage);
    };
  const auto s0 = std::chrono::steady_clock::now();
  std::unique_ptr<transport::Transport> raw;
  st = equarx::internal::CreateMpiTransport(MPI_COMM_WORLD, mo, &raw, hook);
  if (!st.ok()) {
    const double ms = MsSince(s0);
    std::printf("FAULT rank=%d where=setup status=%s call_ms=%.0f elapsed_ms=%.0f deadline_ms=%u message=\"%s\"\n",
                rank, std::string(equarx::StatusCodeName(st.code())).c_str(), ms, ms, deadline_ms,
                st.message().c_str());
    std::fflush(stdout);
    EndJob(rank, "set-up failed: " + st.ToString());  // no communicator: end the job directly
  }
  auto counting = std::make_unique<CountingTransport>(std::move(raw));
  CountingTransport* counter = counting.get();
  equarx::Communicator comm(std::move(counting));

  const bool new_shape = point == "new-shape" || point == "new-shape-rd";
  size_t count = size_t(elements);
  std::vector<float> x(count, 1.0f), y(count);
  equarx::AllReduceOptions o;
  o.timeout_ms = deadline_ms;
  o.algorithm = point == "new-shape-rd" ? equarx::Algorithm::kRecursiveDoubling
                : new_shape                 ? equarx::Algorithm::kOneShot
                                            : equarx::Algorithm::kFull;
  o.validate = new_shape;  // without it a full call's messages are exactly its RS and its AG
  // One good call first, so every rank is known to be in the collective phase.
  st = comm.AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o);
  if (!st.ok()) {
    std::printf("FAULT rank=%d where=first-call (unexpected) %s\n", rank, st.ToString().c_str());
    std::fflush(stdout);
    _exit(3);
  }
  const uint64_t per_call = counter->sends();
  if (mode == "stop-idle") {
    if (rank == victim) Fault(rank, sig, point, "before-barrier");
    const auto b0 = std::chrono::steady_clock::now();
    equarx::tools::MpiBarrier(MPI_COMM_WORLD, int(deadline_ms));
    std::printf("BARRIER rank=%d completed after %.0f ms\n", rank, MsSince(b0));  // must not happen
    std::fflush(stdout);
    _exit(1);
  }
  if (rank == victim) {
    if (point == "setup") _exit(6);  // the set-up completed although the victim signalled itself
    if (point == "between") Fault(rank, sig, point, "after-call-1");
    if (per_call < 1 || (!new_shape && per_call % 2 != 0)) {  // rs and ag split the call in halves
      std::printf("VICTIM-ERROR rank=%d: %llu messages per call, expected an even number (rs and ag)\n", rank,
                  (unsigned long long)per_call);
      std::fflush(stdout);
      _exit(7);
    }
    const uint64_t half = per_call / 2;
    const uint64_t k = new_shape ? 1 + rng() % per_call : (point == "rs" ? 1 : half + 1) + rng() % half;
    if (new_shape) count /= 2;
    counter->Arm(per_call + k, sig, point,
                 "message:" + std::to_string(k) + "/" + std::to_string(per_call));
    (void)comm.AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o);
    _exit(4);  // not reached while stopped: the survivors end the job first
  }
  if (new_shape) count /= 2;  // the survivors' calls: the new shape
  const auto t0 = std::chrono::steady_clock::now();
  double call_ms = 0;
  for (int i = 0; i < 50 && st.ok(); ++i) {
    const auto c0 = std::chrono::steady_clock::now();
    st = comm.AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o);
    call_ms = MsSince(c0);
  }
  std::printf("FAULT rank=%d where=call status=%s call_ms=%.0f elapsed_ms=%.0f deadline_ms=%u message=\"%s\"\n", rank,
              std::string(equarx::StatusCodeName(st.code())).c_str(), call_ms, MsSince(t0), deadline_ms,
              st.message().c_str());
  // A failed communicator must say so at once on every later call.
  const auto l0 = std::chrono::steady_clock::now();
  Status later = comm.AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, o);
  std::printf("LATER rank=%d status=%s call_ms=%.0f message=\"%s\"\n", rank,
              std::string(equarx::StatusCodeName(later.code())).c_str(), MsSince(l0), later.message().c_str());
  std::fflush(stdout);
  equarx::tools::EndJobIfFailed(comm);
  _exit(st.ok() ? 1 : 5);  // only if the communicator did not fail: never a silent success
}
