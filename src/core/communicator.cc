// equarx Communicator: the only place that knows every module. It resolves options against
// the environment, validates the call on every rank, picks the plan and runs it on the
// communicator's transport with the communicator's reused scratch.
#include "equarx/communicator.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "algo/cost_model.h"
#include "algo/scratch.h"
#include "algo/selector.h"
#include "common/env.h"
#include "common/worker_pool.h"
#include "core/validate.h"
#include "algo/hierarchical.h"
#include "transport/inproc/inproc_transport.h"

namespace equarx {

struct Communicator::Impl {
  std::unique_ptr<transport::Transport> transport;
  env::Settings settings;
  algo::Scratch scratch;
  algo::Scratch hier_scratch;  // algorithm hierarchical's own buffers (scratch: its inner calls)
  algo::TuneTable tune = algo::TuneTable::Defaults();
  std::string tune_path;  // the file `tune` came from ("" = defaults)
  Status tune_status;     // why that file could not be used, if it could not

  // Makes `tune` the table of `path` (cached: loaded only when the path changes).
  void UseTuneFile(const std::string& path) {
    if (path == tune_path) return;
    tune_path = path;
    tune = algo::TuneTable::Defaults();
    tune_status = path.empty() ? Status::Ok() : algo::TuneTable::Load(path, &tune);
  }
  // Without a tune file auto asks the cost model (algo::AutoTable): its tables, by the
  // inputs they depend on (at most 32 kept).
  std::map<std::string, algo::TuneTable> modeled;
  const algo::TuneTable& ModelTable(const AllReduceOptions& o, DType dtype, int ranks) {
    const std::string key = FormatOptions(algo::ModelTableInputs(o)) + " dtype=" +
                            std::string(DTypeName(dtype)) + " ranks=" + std::to_string(ranks);
    auto it = modeled.find(key);
    if (it == modeled.end()) {
      if (modeled.size() >= 32) modeled.clear();
      it = modeled.emplace(key, algo::ModelTuneTable(o, dtype, ranks, {settings.link_gbit, settings.step_us}))
               .first;
    }
    return it->second;
  }
  std::vector<core::Descriptor> descriptors;
  std::vector<transport::Request> check_requests;
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
  // The cores divided by the ranks that share them (also ranks_per_host), at most 8.
  int DefaultThreads(uint32_t ranks_per_host) const {
    return std::clamp(cores / std::max(local_ranks, int(ranks_per_host)), 1, 8);
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
};

Communicator::Communicator(std::unique_ptr<transport::Transport> transport)
    : impl_(std::make_unique<Impl>()) {
  impl_->transport = std::move(transport);
  impl_->settings = env::Read();
  impl_->UseTuneFile(impl_->settings.tune_file);
  impl_->ReadCores();
  const size_t n = size_t(impl_->transport->size());
  impl_->descriptors.resize(n);
  impl_->check_requests.resize(2 * n);
}

Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->transport->rank(); }
int Communicator::size() const { return impl_->transport->size(); }

CommStats Communicator::stats() const {
  CommStats s;
  s.bytes_sent = impl_->transport->bytes_sent();
  s.calls = impl_->calls;
  return s;
}

const Status& Communicator::failure() const { return impl_->failed; }

Status Communicator::AllReduce(const void* send, void* recv, size_t count, DType dtype,
                               const AllReduceOptions& options) {
  return AllReduce(send, recv, count, dtype, options, AllReduceExtras{});
}

namespace {

// The call's options with every "use the environment / the default" value filled in, so that
// every rank checks, describes and runs the same concrete configuration.
AllReduceOptions Resolve(const AllReduceOptions& in, const env::Settings& env) {
  AllReduceOptions o = in;
  if (o.microshards == 0) o.microshards = env.microshards;
  if (o.timeout_ms == 0) o.timeout_ms = env.timeout_ms;
  if (o.ranks_per_host == 0) o.ranks_per_host = env.ranks_per_host;
  if (o.threads == 0) o.threads = env.threads;
  if (o.rotation == Rotation::kDefault) {
    if (!TakesCodec(o.algorithm)) o.rotation = Rotation::kNone;
    else if (env.rotation) o.rotation = *env.rotation;
    else o.rotation = DefaultRotation(o.codec);
  }
  return o;
}

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

}  // namespace

AllReduceOptions ResolveOptions(const AllReduceOptions& options) {
  return Resolve(options, env::Read());
}

Status Communicator::AllReduce(const void* send, void* recv, size_t count, DType dtype,
                               const AllReduceOptions& options, const AllReduceExtras& extras) {
  Impl& m = *impl_;
  if (extras.stats) *extras.stats = AllReduceStats{};
  transport::Transport* t = m.transport.get();
  if (!m.failed.ok()) return m.failed;
  const uint64_t seq = ++m.calls;
  const AllReduceOptions o = Resolve(options, m.settings);
  const auto deadline = transport::Clock::now() + std::chrono::milliseconds(o.timeout_ms);
  // Every message of call `seq` carries seq in the tag's high half, so nothing left over from
  // a failed call can match a later one.
  const uint64_t tag_base = seq << 32;

  Status local = core::CheckLocal(send, recv, count, dtype, o, extras.residual);
  // The table auto resolves through: the tune file's, else the cost model's for this call
  // (calls that do not use auto never look at it).
  const algo::TuneTable* table = &m.tune;
  if (core::UsesAuto(o)) {
    m.UseTuneFile(o.tune_file ? o.tune_file : m.settings.tune_file);
    if (local.ok() && !m.tune_status.ok()) local = m.tune_status;
    if (m.tune_path.empty() && local.ok()) table = &m.ModelTable(o, dtype, int(t->size()));
  }
  // A rotation would spread a NaN/Inf over its block (or overflow on huge values): such a call
  // runs unrotated on every rank, which the descriptor exchange makes every rank agree on.
  // Each rank finds out in one of two ways (validate on):
  //  - a rank that could repeat the call (a flat algorithm, out of place, no error feedback,
  //    normal execution mode) does not read its input first (kUnscanned). If every rank is
  //    such, the call rotates guarded (codec.h: a block with an unsafe input comes out NaN)
  //    and, where a result is NaN or Inf, is repeated unrotated. Every rank inverse-rotates
  //    every element of the same wire bytes (the executor's DecodeOut), so every rank sees the
  //    same and repeats or not;
  //  - any other rank checks its input before the exchange (SafeToRotate: kSafe or kUnsafe).
  // A kUnsafe anywhere: unrotated. kSafe and kUnscanned mixed: the unscanned ranks check now
  // and a second exchange settles it. Without validate nothing is checked (documented).
  bool rotate = o.rotation == Rotation::kHadamard && t->size() > 1 && count > 0;
  enum : uint8_t { kSafe = 0, kUnsafe = 1, kUnscanned = 2 };
  auto scan = [&]() -> uint8_t {
    const bool safe = codec::SafeToRotate(dtype, send, count) &&
                      (!extras.residual || codec::SafeToRotate(DType::kFloat32, extras.residual, count));
    return safe ? kSafe : kUnsafe;
  };
  const size_t bytes = count * DTypeSize(dtype);
  const auto s0 = reinterpret_cast<uintptr_t>(send), r0 = reinterpret_cast<uintptr_t>(recv);
  const bool can_repeat = o.algorithm != Algorithm::kHierarchical && !extras.residual &&
                          o.mode == ExecutionMode::kNormal && (s0 + bytes <= r0 || r0 + bytes <= s0);
  uint8_t rotation_state = kSafe;
  if (rotate && local.ok() && o.validate) rotation_state = can_repeat ? kUnscanned : scan();
  bool guard = false;
  if (o.validate && t->size() > 1) {
    const core::Descriptor mine = core::Describe(count, dtype, o, table->Hash(), rotation_state, local);
    // Argument errors are agreed on every rank (the communicator stays usable); a failed
    // exchange is not.
    Status agreed = core::Agree(t, mine, tag_base | 0xFFFFFFFFull, deadline, m.descriptors.data(),
                                m.check_requests.data());
    if (!agreed.ok()) return m.Fail(seq, agreed, false);
    bool unsafe = false, unscanned = false, all_unscanned = true;
    for (const core::Descriptor& d : m.descriptors) {
      unsafe = unsafe || d.unsafe_for_rotation == kUnsafe;
      unscanned = unscanned || d.unsafe_for_rotation == kUnscanned;
      all_unscanned = all_unscanned && d.unsafe_for_rotation == kUnscanned;
    }
    if (rotate && !unsafe && unscanned && !all_unscanned) {  // mixed: check now, agree again
      if (rotation_state == kUnscanned) rotation_state = scan();
      const core::Descriptor again = core::Describe(count, dtype, o, table->Hash(), rotation_state, local);
      agreed = core::Agree(t, again, tag_base | 0xFFFFFFFEull, deadline, m.descriptors.data(),
                           m.check_requests.data());
      if (!agreed.ok()) return m.Fail(seq, agreed, false);
      for (const core::Descriptor& d : m.descriptors) unsafe = unsafe || d.unsafe_for_rotation == kUnsafe;
    }
    rotate = rotate && !unsafe;
    guard = rotate && all_unscanned;
  } else if (!local.ok()) {
    return local;
  }
  if (count == 0) return Status::Ok();
  if (t->size() == 1) {
    if (extras.residual) {  // nothing is quantized: the result is send + residual, rounded
      float* sum = reinterpret_cast<float*>(m.scratch.Bytes(count * sizeof(float)));
      codec::DecodeAccumulate(codec::WireSpec{codec::RawFormatOf(dtype), 0},
                              static_cast<const uint8_t*>(send), count, DType::kFloat32,
                              extras.residual, sum);
      codec::Convert(DType::kFloat32, sum, count, dtype, recv);
      std::fill(extras.residual, extras.residual + count, 0.0f);
      codec::AccumulateLoss(dtype, recv, sum, count, extras.residual);
    } else if (send != recv) {
      std::memcpy(recv, send, count * DTypeSize(dtype));
    }
    return Status::Ok();
  }

  algo::RunArgs args;
  args.transport = t;
  args.dtype = dtype;
  args.send = send;
  args.recv = recv;
  args.count = count;
  args.microshards = o.microshards;
  args.tag_base = tag_base;
  args.deadline = deadline;
  args.mode = o.mode;
  args.residual = extras.residual;
  codec::EncodeStats encode_stats;
  if (extras.stats) args.stats = &encode_stats;
  if (rotate) args.rotation = codec::RotationSpec{uint32_t(RotationBlockOf(o)), o.seed, guard};
  bool nonfinite = false;
  if (guard) args.rotated_nonfinite = &nonfinite;
  args.pool = m.Pool(o.threads, o.ranks_per_host);
  Status st;
  if (o.algorithm == Algorithm::kHierarchical) {
    // Each shard's inner plan decides its rotation (algo::PlanRotation), checked for every
    // shard on every rank before any data moves.
    st = algo::CheckHierarchical(o, options.rotation, dtype, count, t->size(), *table);
    if (!st.ok()) return st;
    st = algo::ExecuteHierarchical(o, options.rotation, args, *table, &m.scratch, &m.hier_scratch);
  } else {
    const algo::Plan plan = algo::SelectPlan(o, dtype, count, t->size(), *table);
    st = algo::PlanRotation(plan, rotate, options.rotation, options.algorithm, &rotate);
    if (!st.ok()) return st;
    if (!rotate) args.rotation = codec::RotationSpec{};
    st = algo::Execute(plan, args, &m.scratch);
  }
  if (st.ok() && nonfinite) {
    // A guarded call met an input it must not rotate, or overflowed: every rank saw a NaN or Inf
    // result, and every rank still has its input (out of place). Run it again unrotated.
    AllReduceOptions unrotated = options;
    unrotated.rotation = Rotation::kNone;
    return AllReduce(send, recv, count, dtype, unrotated, extras);
  }
  if (extras.stats) *extras.stats = ToStats(encode_stats);
  return m.Fail(seq, st, true);
}

uint64_t Communicator::WireBytesPerRank(size_t count, DType dtype, int ranks,
                                        const AllReduceOptions& options) {
  if (ranks < 2 || count == 0) return 0;
  const env::Settings settings = env::Read();
  const AllReduceOptions o = Resolve(options, settings);
  const algo::TuneTable table =
      core::UsesAuto(o) ? algo::AutoTable(o, dtype, ranks, settings) : algo::TuneTable::Defaults();
  if (o.algorithm == Algorithm::kHierarchical)
    return algo::HierarchicalWireBytes(o, dtype, count, 0, ranks, table);
  algo::Plan plan = algo::SelectPlan(o, dtype, count, ranks, table);
  return algo::PlanWireBytes(plan, 0, ranks, o.microshards);
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
