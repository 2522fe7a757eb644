// equarx plan executor: runs every plan (see plan.h: the ring-shaped ones and two_shot's
// all-to-all lanes) with pipelined microshards. The only schedule engine of the library.
//
// Each shard is cut into M microshards of whole blocks: the M asked for, or by default one per
// kMicroshardElements of the shard, at most kDefaultMicroshards (PlanMicroshards). Each piece
// is a message of its own, and on a network a message costs its stack work and a wake-up
// (about 14 us on the emulated hosts); the overlap that pieces buy is the codec's time, a
// fraction of the wire's, and pays for the extra messages only on shards of many elements
// (docs/benchmarks.md, "Steps, messages and microshards"). All receives of the call are posted
// up front into their own buffers, so a message can land whenever its sender is ready and no
// buffer is ever reused within a call. The work is then issued in a fixed order:
//
//   RS:  for t, for microshard k, for lane: [wait recv (t-1,k)] fused decode-add-encode, isend
//   RS finals + AG start, for k: own + chains in lane order (all-to-all: every contribution
//        in rank order) -> f32; encode once; keep decode(own bytes) as this rank's result;
//        isend to each AG lane
//   AG:  for t, for k, for lane: wait recv (t,k), forward the same bytes, decode into output
//
// Stochastic rounding: each encode gets its own stream (HopWire: phase, lane, step, rank).
// Error feedback: the contribution is staged once as f32(send) + residual; every RS encode of
// this rank then runs unfused (sum, encode, decode) so that residual += what the encode lost,
// and the owner adds (final sum - its result) for its own shard.
// Rotation: contributions are read and results written through CallIo::Local / DecodeOut,
// which rotate on the way in and out (contribution.h); the schedule itself does not change.
//
// Waves (bounded scratch): every buffer above has its own place, so a call's scratch grows
// with the message (a raw ring's is about 3x it). A call whose buffers would pass
// ScratchBound (plan.h) runs its microshards in W waves instead: the shards are cut into
// W * M microshards, and wave w runs microshards w*M .. w*M + M - 1 of every shard through the
// whole schedule above, in buffers sized for M microshards that every wave reuses. The
// microshards cut the same shards on the same block grid, so the results are the bits of one
// wave (a result does not depend on the microshard count); W is a function of the plan, the
// floor and whether error feedback is on, so every rank and PlanWireBytes cut alike. Wave w's tags differ from every other wave's in
// bits 48 and up (WaveTag); wave 0 of a one-wave call sends exactly what it always has.
//
// one_shot plans have their own schedule (one_shot.cc; recursive_doubling.cc for recursive_doubling);
// Execute hands them over.
// The walk over the steps (ForEachStep) is one function; PlanWireBytes runs it over the sends
// and adds their bytes instead of sending them, so the predicted bytes come from the schedule.
//
// While microshard k of step t is on the wire, the next rank already works on k of step t+1
// and this rank on k+1: coding overlaps communication. Every wait depends only on sends of
// earlier steps, so the order cannot deadlock; every wait has the call's deadline, and on any
// failure all live requests are cancelled before returning (requests.h).
#include <algorithm>
#include <cstring>

#include "algo/call_io.h"
#include "algo/one_shot.h"
#include "algo/plan.h"
#include "algo/scratch.h"

namespace equarx::algo {
namespace {

using codec::WireSpec;

size_t CeilDiv(size_t a, size_t b) { return (a + b - 1) / b; }

// The tags of wave w: the call's, with w in bits 48 and up (wave 0: the call's own).
uint64_t WaveTag(uint64_t tag_base, size_t wave) { return tag_base ^ (uint64_t(wave) << 48); }

// The most steps of any lane of either phase.
int MaxSteps(const Plan& p, int n) {
  int tmax = 0;
  for (int phase = 0; phase < 2; ++phase)
    for (int l = 0; l < NumLanes(p, phase, n); ++l) tmax = std::max(tmax, LaneAt(p, phase, l).steps);
  return tmax;
}

// Microshard k (of m) of the chunk of `owner` (of n) of a region: whole blocks.
Range MicroOf(const Plan& p, int n, size_t m, int region, int owner, size_t k) {
  return SplitBlocks(SplitBlocks(p.regions[region], p.granule, size_t(n), size_t(owner)), p.granule,
                     m, k);
}

// The chunks, as rank offsets from this rank: at step t the RS sends the chunk dir * (steps - t)
// ahead and receives the one before it; the AG receives the chunk dir * (t + 1) behind and
// sends (the owner at step 0, then forwarding) the chunk dir * t behind.
long RsSendChunk(const Lane& ln, int t) { return long(ln.dir) * (ln.steps - t); }
long RsRecvChunk(const Lane& ln, int t) { return long(ln.dir) * (ln.steps - t - 1); }
long AgRecvChunk(const Lane& ln, int t) { return -long(ln.dir) * (t + 1); }
long AgSendChunk(const Lane& ln, int t) { return -long(ln.dir) * t; }

// Microshards k0 .. k0 + count - 1 of m per shard: one wave's.
struct Window {
  size_t m = 1, k0 = 0, count = 1;
  size_t end() const { return k0 + count; }
};

// The schedule's walk, shared by the executor and PlanWireBytes: every step of a phase
// (0 = RS, 1 = AG) of rank r of n in schedule order — step t, then microshard k (of the
// window's), then lane l — whose microshard of the chunk chunk(lane, t) is not empty:
// fn(l, lane, t, k, range).
template <class Fn>
Status ForEachStep(const Plan& p, int r, int n, Window win, int phase, long (*chunk)(const Lane&, int),
                   Fn fn) {
  const int tmax = MaxSteps(p, n);
  const size_t m = win.m;
  for (int t = 0; t < tmax; ++t)
    for (size_t k = win.k0; k < win.end(); ++k)
      for (int l = 0; l < NumLanes(p, phase, n); ++l) {
        const Lane ln = LaneAt(p, phase, l);
        if (t >= ln.steps) continue;
        const Range mr = MicroOf(p, n, m, ln.region, Mod(long(r) + chunk(ln, t), n), k);
        if (mr.count == 0) continue;
        EQUARX_RETURN_IF_ERROR(fn(l, ln, t, k, mr));
      }
  return Status::Ok();
}

// The most blocks in any shard of the plan on n ranks.
size_t ShardBlocks(const Plan& p, int n) {
  size_t max_blocks = 0;
  for (int g = 0; g < p.num_regions; ++g)
    max_blocks = std::max(max_blocks, CeilDiv(p.regions[g].count, p.granule));
  return CeilDiv(max_blocks, size_t(n));
}

// Geometry of one wave: where each (phase, lane, step, microshard) buffer lives.
struct Layout {
  int n = 0, r = 0, tmax = 0;
  int lanes = 2;  // lanes per phase the buffers and tags are laid out for
  Window win;
  size_t rs_slot = 0, ag_slot = 0, micro_elems = 0;
  size_t rs_recv = 0, rs_send = 0, ag_recv = 0, ag_own = 0, acc = 0, staged = 0, ef_tmp = 0,
         io_tmp = 0, total = 0;

  size_t Index(int lane, int t, size_t k) const { return (size_t(lane) * tmax + t) * win.count + (k - win.k0); }
  size_t Slots() const { return size_t(lanes) * size_t(tmax) * win.count; }  // lanes x steps x micro
  // The staged contribution's place for microshard k of owner o's chunk of region g.
  size_t StagedIndex(int g, int o, size_t k) const {
    return (size_t(g) * size_t(n) + size_t(o)) * win.count + (k - win.k0);
  }
};

// `staged`: the contribution is staged as f32 (naive fp8's precast, error feedback), one
// microshard-sized slot for each of the wave's microshards of every chunk; `ef`: error
// feedback's microshard-sized f32 sum; `io_tmp`: CallIo's two temporaries (rotation or error
// feedback).
Layout MakeLayout(const Plan& p, int n, int r, Window win, bool staged, bool ef, bool io_tmp) {
  Layout L;
  L.n = n;
  L.r = r;
  L.win = win;
  L.lanes = p.all_to_all ? n - 1 : 2;
  L.tmax = MaxSteps(p, n);
  L.micro_elems = CeilDiv(ShardBlocks(p, n), win.m) * p.granule;
  auto round64 = [](size_t b) { return (b + 63) & ~size_t(63); };
  L.rs_slot = round64(codec::WireBytes(p.rs_wire, L.micro_elems));
  L.ag_slot = round64(codec::WireBytes(p.ag_wire, L.micro_elems));
  const size_t slots = L.Slots(), micro_f32 = round64(L.micro_elems * sizeof(float));
  L.rs_recv = 0;
  L.rs_send = L.rs_recv + slots * L.rs_slot;
  L.ag_recv = L.rs_send + slots * L.rs_slot;
  L.ag_own = L.ag_recv + slots * L.ag_slot;
  L.acc = L.ag_own + size_t(p.num_regions) * win.count * L.ag_slot;
  L.staged = L.acc + size_t(p.num_regions) * win.count * micro_f32;
  L.ef_tmp = L.staged + (staged ? size_t(p.num_regions) * size_t(n) * win.count * micro_f32 : 0);
  L.io_tmp = L.ef_tmp + (ef ? micro_f32 : 0);
  L.total = L.io_tmp + (io_tmp ? 2 * micro_f32 : 0);
  return L;
}

}  // namespace

size_t PlanMicroshards(const Plan& p, int ranks, size_t asked) {
  if (asked) return asked;
  const size_t shard = ShardBlocks(p, ranks) * p.granule;
  return std::clamp<size_t>(shard / kMicroshardElements, 1, kDefaultMicroshards);
}

namespace {

// The waves of a plan run with `asked` microshards (PlanMicroshards) per wave on n ranks: the
// fewest whose buffers stay within ScratchBound, counted with the microshard-sized temporaries
// of error feedback and the rotation on (so that the count depends on the plan, the floor and
// whether error feedback is on, which every rank and PlanWireBytes know). Each wave keeps at
// least one block per microshard.
Window WavesOf(const Plan& p, int n, size_t asked, size_t floor, bool ef) {
  const size_t microshards = PlanMicroshards(p, n, asked);
  const size_t bound = ScratchBound(p, floor), most = std::max<size_t>(1, ShardBlocks(p, n) / microshards);
  const bool staged = p.precast_e5m2 || ef;
  const size_t w = FewestParts(bound, most, [&](size_t k) {
    return MakeLayout(p, n, 0, Window{microshards * k, 0, microshards}, staged, true, true).total;
  });
  return Window{microshards * w, 0, microshards};
}

class Run {
 public:
  // Wave `wave` (window `win`) of the call.
  Run(const Plan& p, const RunArgs& a, Scratch* s, Window win, size_t wave)
      : p_(p), a_(a), n_(a.transport->size()), r_(a.transport->rank()),
        staged_(p.precast_e5m2 || a.residual),
        L_(MakeLayout(p, n_, r_, win, staged_, a.residual != nullptr,
                      a.residual != nullptr || a.rotation.block != 0)),
        base_(s->Bytes(L_.total)),
        io_(s, 4 * L_.Slots(), a, staged_ ? Staged(0, 0, win.k0) : nullptr,  // rs/ag recv, rs/ag send
            a.residual || a.rotation.block ? reinterpret_cast<float*>(base_ + L_.io_tmp) : nullptr,
            L_.micro_elems),
        esize_(DTypeSize(a.dtype)), wave_tag_(WaveTag(a.tag_base, wave)) {}

  Status Go() { return Body(); }

 private:
  enum Kind { kRsRecv = 0, kRsSend = 1, kAgRecv = 2, kAgSend = 3 };

  Range Micro(int region, int owner, size_t k) const { return MicroOf(p_, n_, L_.win.m, region, owner, k); }
  size_t Req(Kind kind, int lane, int t, size_t k) const {
    return size_t(kind) * L_.Slots() + L_.Index(lane, t, k);
  }
  uint8_t* RsRecv(int lane, int t, size_t k) { return base_ + L_.rs_recv + L_.Index(lane, t, k) * L_.rs_slot; }
  uint8_t* RsSend(int lane, int t, size_t k) { return base_ + L_.rs_send + L_.Index(lane, t, k) * L_.rs_slot; }
  uint8_t* AgRecv(int lane, int t, size_t k) { return base_ + L_.ag_recv + L_.Index(lane, t, k) * L_.ag_slot; }
  size_t Local(int region, size_t k) const { return size_t(region) * L_.win.count + (k - L_.win.k0); }
  uint8_t* AgOwn(int region, size_t k) { return base_ + L_.ag_own + Local(region, k) * L_.ag_slot; }
  float* Acc(int region, size_t k) {
    return reinterpret_cast<float*>(base_ + L_.acc) + Local(region, k) * MicroF32();
  }
  size_t MicroF32() const { return ((L_.micro_elems * sizeof(float) + 63) & ~size_t(63)) / sizeof(float); }
  uint64_t Tag(int phase, int lane, int t, size_t k) const {
    return wave_tag_ | ((uint64_t(phase * L_.lanes + lane) * uint64_t(L_.tmax) + uint64_t(t)) * L_.win.count +
                        (k - L_.win.k0));
  }
  // The staged f32 copy of this rank's contribution to microshard k of owner o's chunk of
  // region g: e5m2-cast for naive fp8, send + residual with error feedback.
  float* Staged(int g, int o, size_t k) const {
    return reinterpret_cast<float*>(base_ + L_.staged) + L_.StagedIndex(g, o, k) * MicroF32();
  }
  // io_.Local reads that microshard from its staged copy (when the contribution is staged).
  void UseStaged(int g, int o, size_t k) {
    if (staged_) io_.StageAt(Staged(g, o, k), Micro(g, o, k).begin);
  }
  float* EfSum() { return reinterpret_cast<float*>(base_ + L_.ef_tmp); }

  Status Post(Kind kind, int lane, int t, size_t k, int peer, int phase, void* buf, size_t bytes) {
    const size_t i = Req(kind, lane, t, k);
    const uint64_t tag = Tag(phase, lane, t, k);
    return (kind == kRsSend || kind == kAgSend) ? io_.Send(i, peer, tag, buf, bytes)
                                                : io_.Recv(i, peer, tag, buf, bytes);
  }
  Status WaitReq(Kind kind, int lane, int t, size_t k) { return io_.Wait(Req(kind, lane, t, k)); }

  template <class Fn>
  Status ForEachStep(int phase, long (*chunk)(const Lane&, int), Fn fn) {
    return algo::ForEachStep(p_, r_, n_, L_.win, phase, chunk, fn);
  }

  // Every receive is posted before the first send (all tags differ, so their order is free).
  Status PostReceives() {
    EQUARX_RETURN_IF_ERROR(ForEachStep(0, RsRecvChunk, [&](int l, const Lane& ln, int t, size_t k,
                                                            Range mr) {
      return Post(kRsRecv, l, t, k, Mod(r_ - ln.dir, n_), 0, RsRecv(l, t, k),
                  codec::WireBytes(p_.rs_wire, mr.count));
    }));
    return ForEachStep(1, AgRecvChunk, [&](int l, const Lane& ln, int t, size_t k, Range mr) {
      return Post(kAgRecv, l, t, k, Mod(r_ - ln.dir, n_), 1, AgRecv(l, t, k),
                  codec::WireBytes(p_.ag_wire, mr.count));
    });
  }

  Status ReduceScatter() {
    auto step = [&](int l, const Lane& ln, int t, size_t k, Range mr) -> Status {
      uint8_t* out = RsSend(l, t, k);
      const codec::WireSpec w = HopWire(p_.rs_wire, 0, StreamLane(l), t, r_, mr.begin);
      if (t > 0) EQUARX_RETURN_IF_ERROR(WaitReq(kRsRecv, l, t - 1, k));
      UseStaged(ln.region, Mod(long(r_) + RsSendChunk(ln, t), n_), k);
      if (a_.residual) {
        const float* sum = static_cast<const float*>(io_.Local(mr).data);
        if (t > 0) {
          io_.DecodeAccumulate(w, RsRecv(l, t - 1, k), mr.count, DType::kFloat32, sum, EfSum());
          sum = EfSum();
        }
        io_.EncodeWithLoss(w, sum, mr, out);
      } else if (t == 0) {
        io_.EncodeLocal(w, mr, out);
      } else {
        io_.DecodeAccumulateEncodeLocal(w, RsRecv(l, t - 1, k), mr, out);
      }
      return Post(kRsSend, l, t, k, Mod(r_ + ln.dir, n_), 0, out,
                  codec::WireBytes(p_.rs_wire, mr.count));
    };
    return ForEachStep(0, RsSendChunk, step);
  }

  // The stream lane of HopWire: the lane, except in all-to-all plans, whose lanes all encode
  // different shards at their one step (lane 0 for all, as the stream has always been).
  int StreamLane(int l) const { return p_.all_to_all ? 0 : l; }

  // The owner's final shard (in f32) for microshard k of region g, then the AG's first send.
  // The sum's order is fixed: the own contribution, then the last receive of each RS lane of
  // the region in lane order; in all-to-all plans every rank's contribution in rank order
  // (lane l receives from rank r - l - 1). A lane directly after the own contribution is
  // added to it in one fused kernel; every order gives the same bits on every rank.
  Status FinishShard(int g, size_t k) {
    Range mr = Micro(g, r_, k);
    if (mr.count == 0) return Status::Ok();
    float* acc = Acc(g, k);
    UseStaged(g, r_, k);
    const CallIo::View local = io_.Local(mr);
    enum { kEmpty, kOwnPending, kSum } state = kEmpty;
    auto add_own = [&] {
      if (state == kEmpty) {
        state = kOwnPending;  // converted with the next lane, or alone at the end
      } else {  // acc + f32(own contribution), the own values read as a raw wire
        io_.DecodeAccumulate(codec::WireSpec{codec::RawFormatOf(local.type), 0},
                             static_cast<const uint8_t*>(local.data), mr.count, DType::kFloat32,
                             acc, acc);
      }
    };
    auto add_lane = [&](int l) -> Status {
      const Lane ln = LaneAt(p_, 0, l);
      if (ln.region != g || ln.steps == 0) return Status::Ok();
      EQUARX_RETURN_IF_ERROR(WaitReq(kRsRecv, l, ln.steps - 1, k));
      const uint8_t* in = RsRecv(l, ln.steps - 1, k);
      if (state == kOwnPending)
        io_.DecodeAccumulate(p_.rs_wire, in, mr.count, local.type, local.data, acc);
      else if (state == kEmpty)
        io_.Decode(p_.rs_wire, in, mr.count, DType::kFloat32, acc);
      else
        io_.DecodeAccumulate(p_.rs_wire, in, mr.count, DType::kFloat32, acc, acc);
      state = kSum;
      return Status::Ok();
    };
    if (p_.all_to_all) {
      for (int q = 0; q < n_; ++q) {
        if (q == r_) add_own();
        else EQUARX_RETURN_IF_ERROR(add_lane(Mod(long(r_) - q, n_) - 1));
      }
    } else {
      add_own();
      for (int l = 0; l < NumLanes(p_, 0, n_); ++l) EQUARX_RETURN_IF_ERROR(add_lane(l));
    }
    if (state == kOwnPending) io_.Convert(local.type, local.data, mr.count, DType::kFloat32, acc);
    uint8_t* own = AgOwn(g, k);
    io_.Encode(HopWire(p_.ag_wire, 1, g, 0, r_, mr.begin), DType::kFloat32, acc, mr.count, own);
    io_.DecodeOut(p_.ag_wire, own, mr);
    if (a_.residual) io_.OwnerLoss(mr, acc);
    for (int l = 0; l < NumLanes(p_, 1, n_); ++l) {
      const Lane ln = LaneAt(p_, 1, l);
      if (ln.region != g || ln.steps == 0) continue;
      EQUARX_RETURN_IF_ERROR(Post(kAgSend, l, 0, k, Mod(r_ + ln.dir, n_), 1, own,
                                  codec::WireBytes(p_.ag_wire, mr.count)));
    }
    return Status::Ok();
  }

  Status AllGather() {
    auto step = [&](int l, const Lane& ln, int t, size_t k, Range mr) -> Status {
      EQUARX_RETURN_IF_ERROR(WaitReq(kAgRecv, l, t, k));
      uint8_t* in = AgRecv(l, t, k);
      const size_t bytes = codec::WireBytes(p_.ag_wire, mr.count);
      if (t + 1 < ln.steps)
        EQUARX_RETURN_IF_ERROR(Post(kAgSend, l, t + 1, k, Mod(r_ + ln.dir, n_), 1, in, bytes));
      io_.DecodeOut(p_.ag_wire, in, mr);
      return Status::Ok();
    };
    return ForEachStep(1, AgRecvChunk, step);
  }

  // The wave's staged contributions (every microshard of the window in every chunk): naive
  // fp8's cast to e5m2 (and back to f32, exactly) before anything is summed; error feedback's
  // send + residual (CallIo::StageResidual).
  void Stage() {
    uint8_t* tmp = RsSend(0, 0, L_.win.k0);  // the e5m2 image, one microshard at a time
    for (int g = 0; g < p_.num_regions; ++g)
      for (int o = 0; o < n_; ++o)
        for (size_t k = L_.win.k0; k < L_.win.end(); ++k) {
          const Range mr = Micro(g, o, k);
          if (mr.count == 0) continue;
          UseStaged(g, o, k);
          if (p_.precast_e5m2) {
            io_.Encode(p_.rs_wire, a_.dtype, static_cast<const uint8_t*>(a_.send) + mr.begin * esize_, mr.count, tmp);
            io_.Decode(p_.rs_wire, tmp, mr.count, DType::kFloat32, Staged(g, o, k));
          }
          if (a_.residual) io_.StageResidual(mr);
        }
  }

  Status Body() {
    if (staged_) Stage();
    EQUARX_RETURN_IF_ERROR(PostReceives());
    EQUARX_RETURN_IF_ERROR(ReduceScatter());
    for (size_t k = L_.win.k0; k < L_.win.end(); ++k)
      for (int g = 0; g < p_.num_regions; ++g) EQUARX_RETURN_IF_ERROR(FinishShard(g, k));
    EQUARX_RETURN_IF_ERROR(AllGather());
    EQUARX_RETURN_IF_ERROR(io_.WaitAll());
    if (a_.rotated_nonfinite && io_.RotatedNonfinite()) *a_.rotated_nonfinite = true;
    return Status::Ok();
  }

  const Plan& p_;
  const RunArgs& a_;
  int n_, r_;
  bool staged_;
  Layout L_;
  uint8_t* base_;
  CallIo io_;
  size_t esize_;
  uint64_t wave_tag_;
};

}  // namespace

Status Execute(const Plan& plan, const RunArgs& args, Scratch* scratch) {
  if (args.transport->size() < 2) return Internal("Execute needs at least 2 ranks");
  if (plan.one_shot) return ExecuteOneShot(plan, args, scratch);
  Window win = WavesOf(plan, args.transport->size(), args.microshards, args.scratch_floor, args.residual != nullptr);
  for (size_t w = 0; w * win.count < win.m; ++w, win.k0 += win.count)
    EQUARX_RETURN_IF_ERROR(Run(plan, args, scratch, win, w).Go());
  return Status::Ok();
}

size_t PlanWaves(const Plan& p, int ranks, size_t microshards, size_t scratch_floor, bool ef) {
  const Window w = WavesOf(p, ranks, microshards, scratch_floor, ef);
  return w.m / w.count;
}

uint64_t PlanWireBytes(const Plan& p, int rank, int ranks, size_t microshards, size_t scratch_floor, bool ef) {
  if (ranks < 2) return 0;
  if (p.recursive_doubling) return RecursiveDoublingWireBytes(p, rank, ranks, scratch_floor);
  if (p.one_shot) return OneShotWireBytes(p, ranks, scratch_floor);
  // The executor's own walk over its sends: the RS encodes and the AG's owner sends and
  // forwards, each one message of its microshard's wire bytes.
  uint64_t total = 0;
  auto add = [&](const WireSpec& w) {
    return [&total, w](int, const Lane&, int, size_t, Range mr) {
      total += codec::WireBytes(w, mr.count);
      return Status::Ok();
    };
  };
  Window all = WavesOf(p, ranks, microshards, scratch_floor, ef);  // every wave's microshards
  all.count = all.m;
  (void)ForEachStep(p, rank, ranks, all, 0, RsSendChunk, add(p.rs_wire));
  (void)ForEachStep(p, rank, ranks, all, 1, AgSendChunk, add(p.ag_wire));
  return total;
}

}  // namespace equarx::algo
