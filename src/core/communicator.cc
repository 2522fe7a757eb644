// equarx Communicator: the only place that knows every module. It asks the resolver
// (algo/resolve.h) what a call runs, agrees on it with every rank (core/validate.h,
// core/rotation_guard.h) and runs it on the communicator's transport with the
// communicator's reused scratch.
#include "equarx/communicator.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "algo/hierarchical.h"
#include "algo/one_shot.h"
#include "algo/resolve.h"
#include "algo/scratch.h"
#include "common/env.h"
#include "common/worker_pool.h"
#include "core/rotation_guard.h"
#include "core/validate.h"
#include "transport/inproc/inproc_transport.h"

namespace equarx {

struct Communicator::Impl {
  explicit Impl(std::unique_ptr<transport::Transport> t)
      : transport(std::move(t)), settings(env::Read()), tables(settings),
        exchange(transport->size()),
        peer_bytes(size_t(transport->size())) {
    ReadCores();
    transport->SetSpin(std::chrono::microseconds(settings.spin_us));
  }

  std::unique_ptr<transport::Transport> transport;
  env::Settings settings;
  algo::AutoTables tables;
  algo::Resolved resolved;  // the current call's (reused: nothing allocated per call)
  algo::Scratch scratch;
  algo::HierarchicalScratch hier_scratch;  // algorithm hierarchical's own (scratch: its inner calls)
  core::Exchange exchange;
  core::CheckTree check_tree;
  std::vector<uint64_t> peer_bytes;  // what each peer sent ahead of a refused call
  std::optional<algo::OneShotCall> ahead;  // a one_shot call started beside the exchange
  uint64_t calls = 0;
  std::unique_ptr<common::WorkerPool> pool;  // the codec threads (option `threads`), if > 1

  // The pool for `threads` (0: the default), null for one thread; made when the value changes.
  common::WorkerPool* Pool(uint32_t threads, uint32_t ranks_per_host) {
    const int t = threads ? int(threads) : DefaultThreads(ranks_per_host);
    if (t < 2) return nullptr;
    if (!pool || pool->threads() != t) {
      pool.reset();
      pool = std::make_unique<common::WorkerPool>(t);
    }
    return pool.get();
  }
  // This process's cores and the ranks known to share them (the transport's count, the
  // launchers' local-size variables): read once, when the communicator is made.
  int cores = 1, local_ranks = 1;
  void ReadCores() {
    cpu_set_t set;
    cores = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
    if (cores <= 0) cores = std::max(1, int(std::thread::hardware_concurrency()));
    local_ranks = std::max(transport->local_ranks(), 1);
    for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS"})
      if (const char* e = std::getenv(v)) local_ranks = std::max(local_ranks, std::atoi(e));
  }
  // The cores divided by the ranks that share them (also ranks_per_host), at most
  // env::kDefaultThreadsAtMost (EQUARX_THREADS's default).
  int DefaultThreads(uint32_t ranks_per_host) const {
    return std::clamp(cores / std::max(local_ranks, int(ranks_per_host)), 1, int(env::kDefaultThreadsAtMost));
  }
  // Set by the first call that failed part-way (a timeout, a lost peer, an error inside the
  // collective): the ranks may no longer agree on the call sequence and stale messages may
  // still be in flight, so every later call returns this at once. The transport's connections
  // are ended then too (Transport::Abort), so that every peer learns of it at once.
  Status failed;

  // Returns `st`; a failure that breaks the group also makes this communicator unusable.
  Status Fail(uint64_t seq, const Status& st, bool in_collective) {
    const StatusCode c = st.code();
    if (st.ok() || !failed.ok()) return st;
    if (in_collective || c == StatusCode::kTimeout || c == StatusCode::kRemoteError || c == StatusCode::kInternal) {
      failed = Status(c, "this communicator is unusable: call " + std::to_string(seq) + " failed (" +
                             st.ToString() + "); destroy it and create a new one");
      // Tell the group at once: the peers' calls fail now, not at their deadlines.
      transport->Abort("call " + std::to_string(seq) + " failed (" + st.ToString() + ")");
    }
    return st;
  }

  Status Agree(uint64_t seq, const Status& local, const void* send, const float* residual, algo::RunArgs* args);
  Status SingleRank(const algo::RunArgs& a);
};

Communicator::Communicator(std::unique_ptr<transport::Transport> transport)
    : impl_(std::make_unique<Impl>(std::move(transport))) {}

Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->transport->rank(); }
int Communicator::size() const { return impl_->transport->size(); }
uint32_t Communicator::ranks_per_host() const {
  return algo::ResolveDefaults(AllReduceOptions{}, impl_->settings, impl_->transport->ranks_per_host()).ranks_per_host;
}

CommStats Communicator::stats() const {
  CommStats s;
  s.bytes_sent = impl_->transport->bytes_sent();
  s.calls = impl_->calls;
  s.scratch_bytes = impl_->scratch.capacity() + impl_->hier_scratch.bytes.capacity();
  return s;
}

const Status& Communicator::failure() const { return impl_->failed; }

Status Communicator::AllReduce(const void* send, void* recv, size_t count, DType dtype,
                               const AllReduceOptions& options) {
  return AllReduce(send, recv, count, dtype, options, AllReduceExtras{});
}

namespace {

AllReduceStats ToStats(const codec::EncodeStats& e) {
  AllReduceStats s;
  s.encoded_values = e.values;
  s.clipped = e.clipped;
  s.sum_sq_err_est = e.sum_sq_err_est;
  s.max_abs_err_est = e.max_abs_err_est;
  if (e.values) {
    s.rms_err_est = std::sqrt(e.sum_sq_err_est / double(e.values));
    s.encoded_rms = std::sqrt(e.sum_sq_values / double(e.values));
    if (s.encoded_rms > 0) s.rel_rms_err_est = s.rms_err_est / s.encoded_rms;
  }
  return s;
}

constexpr uint64_t kCheckTag = 0xFFFFFFFFull, kCheckAgainTag = 0xFFFFFFFEull;

}  // namespace

AllReduceOptions ResolveOptions(const AllReduceOptions& options) {
  return algo::ResolveDefaults(options, env::Read());
}

// Validate on: the ranks check that they make the same call (core/validate.h) and decide
// whether it rotates (core/rotation_guard.h). A group of 2^K ranks across hosts checks in K
// steps of one frame to one partner (CheckTree); any other group, and every group on one host,
// sends every rank's descriptor to every other (Exchange; algo::ChecksByTree decides). Where
// the frames say the ranks disagree, every rank runs the Exchange too: its descriptors give the
// refusal's message. A one_shot call starts beside the check instead of after it, and a
// recursive_doubling call runs its steps in the tree's: their messages are consumed only once
// the check proves every rank runs the same call, and a refused call's are drained (each
// descriptor says what its rank sent ahead; the tree drops a partial sum in its own step).
// Sets args->rotation.
Status Communicator::Impl::Agree(uint64_t seq, const Status& local, const void* send, const float* residual,
                                 algo::RunArgs* args) {
  const algo::Resolved& r = resolved;
  transport::Transport* t = transport.get();
  const AllReduceOptions& o = r.options;
  auto spec = [&](bool rotate, bool guard) {
    return rotate ? codec::RotationSpec{uint32_t(RotationBlockOf(o)), o.seed, guard} : codec::RotationSpec{};
  };
  if (!o.validate || t->size() < 2) {  // nothing is checked (documented)
    args->rotation = spec(r.rotate, false);
    return local;
  }
  core::RotationInput input = core::RotationInput::kSafe;
  if (local.ok()) input = core::Announce(r.guard, args->dtype, send, residual, args->count);
  const bool tree = algo::ChecksByTree(t->size(), t->ranks_per_host());
  // one_shot in one piece always rotates guarded; recursive_doubling rides in the tree's steps
  const bool whole = local.ok() && r.plan.one_shot && algo::OneShotPieces(r.plan, t->size()) == 1;
  const bool rides = whole && r.plan.recursive_doubling && tree;
  const bool early = whole && (!r.plan.recursive_doubling || rides);
  if (early) {
    args->rotation = spec(r.rotate, true);
    ahead.emplace(r.plan, *args, &scratch);
  }
  const uint64_t hash = r.table_hash;
  // What this rank sends each peer before the verdict, outside the tree's own steps.
  const uint64_t sent = early && !rides ? algo::OneShotMessageBytes(r.plan, args->count) : 0;
  const core::Descriptor mine = core::Describe(args->count, args->dtype, o, hash, input, sent, local);
  Status st, started;
  uint8_t inputs = 0;
  if (tree) {
    t->Cork(early);  // one_shot's data leaves with the frames
    started = early ? ahead->Start(/*leave_tree_partners=*/true) : Status::Ok();
    st = started.ok() ? check_tree.Run(t, mine, args->tag_base, args->deadline, early ? &*ahead : nullptr)
                      : Status::Ok();
    t->Cork(false);
    if (!started.ok() || !st.ok()) return Fail(seq, started.ok() ? st : started, early);
    inputs = check_tree.rotation_inputs();
    if (!check_tree.agreed()) {
      st = exchange.Agree(t, mine, args->tag_base | kCheckTag, args->deadline);
      if (st.ok()) st = Internal("the call check's frames disagree where the descriptors agree");
    }
  } else {
    t->Cork(early);  // the descriptor and one_shot's data leave together
    st = exchange.Start(t, mine, args->tag_base | kCheckTag, args->deadline);
    started = early ? ahead->Start() : Status::Ok();
    t->Cork(false);
    if (st.ok()) st = exchange.Finish();
    if (!started.ok()) return Fail(seq, started, true);
    for (const core::Descriptor& d : exchange.all()) inputs |= core::InputBit(d.rotation_input);
  }
  if (!st.ok()) {
    if (!exchange.received()) return Fail(seq, st, false);
    // Refused on every rank: take in what the peers sent ahead (the group stays usable).
    for (size_t q = 0; q < peer_bytes.size(); ++q) peer_bytes[q] = exchange.all()[q].sent_ahead;
    if (rides) ahead.reset();  // its steps ran in the tree's: nothing of it is in flight
    const Status drained = ahead ? ahead->Drain(peer_bytes.data())
                                 : algo::DrainOneShot(t, args->tag_base, args->deadline, peer_bytes.data(), &scratch);
    return Fail(seq, drained.ok() ? st : drained, !drained.ok());
  }
  core::RotationVerdict v = core::Settle(r.rotate, inputs);
  if (v.again) {  // mixed: the unscanned ranks check now, and every rank says again
    if (input == core::RotationInput::kUnscanned) input = core::CheckInput(args->dtype, send, residual, args->count);
    st = exchange.Agree(t, core::Describe(args->count, args->dtype, o, hash, input, 0, local),
                        args->tag_base | kCheckAgainTag, args->deadline);
    if (!st.ok()) return Fail(seq, st, false);
    v = core::Settle(r.rotate, exchange.all().data(), exchange.all().size());
  }
  if (early && (v.rotate != r.rotate || (v.rotate && !v.guard)))
    return Fail(seq, Internal("one_shot started with a rotation the ranks did not agree on"), true);
  if (rides && !check_tree.rd_done())
    return Fail(seq, Internal("recursive_doubling's steps did not all add where the ranks agree"), true);
  args->rotation = spec(v.rotate, v.guard);
  return Status::Ok();
}

// One rank: nothing moves and nothing is quantized. With error feedback the result is
// send + residual, rounded, and the residual keeps the rounding's loss.
Status Communicator::Impl::SingleRank(const algo::RunArgs& a) {
  const size_t bytes = a.count * DTypeSize(a.dtype);
  if (a.residual) {
    float* sum = reinterpret_cast<float*>(scratch.Bytes(a.count * sizeof(float)));
    codec::DecodeAccumulate(codec::WireSpec{codec::RawFormatOf(a.dtype), 0}, static_cast<const uint8_t*>(a.send),
                            a.count, DType::kFloat32, a.residual, sum);
    codec::Convert(DType::kFloat32, sum, a.count, a.dtype, a.recv);
    std::fill(a.residual, a.residual + a.count, 0.0f);
    codec::AccumulateLoss(a.dtype, a.recv, sum, a.count, a.residual);
  } else if (a.send != a.recv) {
    std::memcpy(a.recv, a.send, bytes);
  }
  return Status::Ok();
}

Status Communicator::AllReduce(const void* send, void* recv, size_t count, DType dtype,
                               const AllReduceOptions& options, const AllReduceExtras& extras) {
  Impl& m = *impl_;
  if (extras.stats) *extras.stats = AllReduceStats{};
  if (!m.failed.ok()) return m.failed;
  const uint64_t seq = ++m.calls;
  transport::Transport* t = m.transport.get();
  algo::Resolved& r = m.resolved;
  Status local = algo::Resolve(
      {options, dtype, count, t->size(), send == recv, extras.residual != nullptr, t->ranks_per_host()}, m.settings,
      &m.tables, &r);
  if (local.ok()) local = core::CheckLocal(send, recv, count, dtype, r.options, extras.residual);
  const AllReduceOptions& o = r.options;

  algo::RunArgs args;
  args.transport = t;
  args.dtype = dtype;
  args.send = send;
  args.recv = recv;
  args.count = count;
  args.microshards = o.microshards;
  // Every message of call `seq` carries seq in the tag's high half, so nothing left over from
  // a failed call can match a later one.
  args.tag_base = seq << 32;
  args.deadline = transport::Clock::now() + std::chrono::milliseconds(o.timeout_ms);
  args.mode = o.mode;
  args.residual = extras.residual;
  codec::EncodeStats encode_stats;
  if (extras.stats) args.stats = &encode_stats;
  bool nonfinite = false;
  args.rotated_nonfinite = &nonfinite;
  if (local.ok()) args.pool = m.Pool(o.threads, o.ranks_per_host);
  Status st = m.Agree(seq, local, send, extras.residual, &args);
  if (!st.ok() || count == 0) {
    m.ahead.reset();
    return st;
  }
  if (t->size() == 1) return m.SingleRank(args);
  if (m.ahead) st = m.ahead->Finish();
  else if (r.hierarchical) st = algo::ExecuteHierarchical(r, args, &m.scratch, &m.hier_scratch);
  else st = algo::Execute(r.plan, args, &m.scratch);
  m.ahead.reset();
  if (st.ok() && nonfinite) {
    // A guarded call met an input it must not rotate, or overflowed: every rank saw a NaN or Inf
    // result, and every rank still has its input. Run it again unrotated.
    AllReduceOptions unrotated = options;
    unrotated.rotation = Rotation::kNone;
    return AllReduce(send, recv, count, dtype, unrotated, extras);
  }
  if (extras.stats) *extras.stats = ToStats(encode_stats);
  return m.Fail(seq, st, true);
}

namespace {

uint64_t WireBytesOf(const algo::Call& call, const env::Settings& settings, algo::AutoTables* tables) {
  if (call.ranks < 2 || call.count == 0) return 0;
  algo::Resolved r;
  if (!algo::Resolve(call, settings, tables, &r).ok()) return 0;
  if (r.hierarchical) return algo::HierarchicalWireBytes(r, call.dtype, call.count, 0, call.ranks);
  return algo::PlanWireBytes(r.plan, 0, call.ranks, r.options.microshards, algo::kScratchFloor, call.residual);
}

}  // namespace

uint64_t Communicator::WireBytesPerRank(size_t count, DType dtype, int ranks,
                                        const AllReduceOptions& options) {
  const env::Settings settings = env::Read();
  algo::AutoTables tables(settings);
  return WireBytesOf({options, dtype, count, ranks}, settings, &tables);
}

uint64_t Communicator::WireBytesPerRank(size_t count, DType dtype, const AllReduceOptions& options) const {
  const Impl& m = *impl_;
  algo::AutoTables tables(m.settings);
  return WireBytesOf({options, dtype, count, m.transport->size(), false, false, m.transport->ranks_per_host()},
                     m.settings, &tables);
}

Status CreateInProcessGroup(int ranks, std::vector<std::unique_ptr<Communicator>>* out) {
  if (!out) return InvalidArgument("CreateInProcessGroup: out is null");
  if (ranks < 1 || ranks > 4096)
    return InvalidArgument("CreateInProcessGroup: ranks " + std::to_string(ranks) +
                           " is out of range [1, 4096]");
  auto fabric = transport::CreateInprocFabric(ranks);
  out->clear();
  for (int r = 0; r < ranks; ++r)
    out->push_back(std::make_unique<Communicator>(transport::CreateInprocTransport(fabric, r)));
  return Status::Ok();
}

}  // namespace equarx
