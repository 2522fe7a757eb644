// equarx plan executor: runs every plan (see plan.h: the ring-shaped ones and two_shot's
// all-to-all lanes) with pipelined microshards. The only schedule engine of the library.
//
// Each shard is cut into M microshards of whole blocks. All receives of the call are posted
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
// which rotate on the way in and out (call_io.h); the schedule itself does not change.
//
// one_shot plans have their own schedule (one_shot.cc); Execute hands them over.
// The walk over the steps (ForEachStep) is one function; PlanWireBytes runs it over the sends
// and adds their bytes instead of sending them, so the predicted bytes come from the schedule.
//
// While microshard k of step t is on the wire, the next rank already works on k of step t+1
// and this rank on k+1: coding overlaps communication. Every wait depends only on sends of
// earlier steps, so the order cannot deadlock; every wait has the call's deadline, and on any
// failure all live requests are cancelled before returning (call_io.h).
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

// The schedule's walk, shared by the executor and PlanWireBytes: every step of a phase
// (0 = RS, 1 = AG) of rank r of n in schedule order — step t, then microshard k (of m), then
// lane l — whose microshard of the chunk chunk(lane, t) is not empty: fn(l, lane, t, k, range).
template <class Fn>
Status ForEachStep(const Plan& p, int r, int n, size_t m, int phase, long (*chunk)(const Lane&, int),
                   Fn fn) {
  const int tmax = MaxSteps(p, n);
  for (int t = 0; t < tmax; ++t)
    for (size_t k = 0; k < m; ++k)
      for (int l = 0; l < NumLanes(p, phase, n); ++l) {
        const Lane ln = LaneAt(p, phase, l);
        if (t >= ln.steps) continue;
        const Range mr = MicroOf(p, n, m, ln.region, Mod(long(r) + chunk(ln, t), n), k);
        if (mr.count == 0) continue;
        EQUARX_RETURN_IF_ERROR(fn(l, ln, t, k, mr));
      }
  return Status::Ok();
}

// Geometry of one call: where each (phase, lane, step, microshard) buffer lives.
struct Layout {
  int n = 0, r = 0, tmax = 0;
  int lanes = 2;  // lanes per phase the buffers and tags are laid out for
  size_t m = 0;
  size_t rs_slot = 0, ag_slot = 0, micro_elems = 0;
  size_t rs_recv = 0, rs_send = 0, ag_recv = 0, ag_own = 0, acc = 0, staged = 0, ef_tmp = 0,
         io_tmp = 0, total = 0;

  size_t Index(int lane, int t, size_t k) const { return (size_t(lane) * tmax + t) * m + k; }
  size_t Slots() const { return size_t(lanes) * size_t(tmax) * m; }  // lanes x steps x micro
};

// `staged`: the contribution is staged as f32 (naive fp8's precast, error feedback);
// `ef`: error feedback's microshard-sized f32 sum; `io_tmp`: CallIo's two temporaries
// (rotation or error feedback).
Layout MakeLayout(const Plan& p, int n, int r, size_t m, size_t count, bool staged, bool ef,
                  bool io_tmp) {
  Layout L;
  L.n = n;
  L.r = r;
  L.m = m;
  L.lanes = p.all_to_all ? n - 1 : 2;
  L.tmax = MaxSteps(p, n);
  size_t max_blocks = 0;
  for (int g = 0; g < p.num_regions; ++g)
    max_blocks = std::max(max_blocks, CeilDiv(p.regions[g].count, p.granule));
  L.micro_elems = CeilDiv(CeilDiv(max_blocks, size_t(n)), m) * p.granule;
  auto round64 = [](size_t b) { return (b + 63) & ~size_t(63); };
  L.rs_slot = round64(codec::WireBytes(p.rs_wire, L.micro_elems));
  L.ag_slot = round64(codec::WireBytes(p.ag_wire, L.micro_elems));
  const size_t slots = L.Slots();
  L.rs_recv = 0;
  L.rs_send = L.rs_recv + slots * L.rs_slot;
  L.ag_recv = L.rs_send + slots * L.rs_slot;
  L.ag_own = L.ag_recv + slots * L.ag_slot;
  L.acc = L.ag_own + size_t(p.num_regions) * m * L.ag_slot;
  L.staged = L.acc + round64(size_t(p.num_regions) * m * L.micro_elems * sizeof(float));
  L.ef_tmp = L.staged + (staged ? round64(count * sizeof(float)) : 0);
  L.io_tmp = L.ef_tmp + (ef ? round64(L.micro_elems * sizeof(float)) : 0);
  L.total = L.io_tmp + (io_tmp ? 2 * round64(L.micro_elems * sizeof(float)) : 0);
  return L;
}

class Run {
 public:
  Run(const Plan& p, const RunArgs& a, Scratch* s)
      : p_(p), a_(a), n_(a.transport->size()), r_(a.transport->rank()),
        staged_(p.precast_e5m2 || a.residual),
        L_(MakeLayout(p, n_, r_, a.microshards, a.count, staged_, a.residual != nullptr,
                      a.residual != nullptr || a.rotation.block != 0)),
        io_(a.transport, s, 4 * L_.Slots(), a.deadline, a.mode, a.stats),  // rs/ag recv, rs/ag send
        base_(s->Bytes(L_.total)), esize_(DTypeSize(a.dtype)) {
    io_.Bind(a, staged_ ? Staged() : nullptr,
             a.residual || a.rotation.block ? reinterpret_cast<float*>(base_ + L_.io_tmp) : nullptr,
             L_.micro_elems);
  }

  Status Go() { return Body(); }

 private:
  enum Kind { kRsRecv = 0, kRsSend = 1, kAgRecv = 2, kAgSend = 3 };

  Range Micro(int region, int owner, size_t k) const { return MicroOf(p_, n_, L_.m, region, owner, k); }
  size_t Req(Kind kind, int lane, int t, size_t k) const {
    return size_t(kind) * L_.Slots() + L_.Index(lane, t, k);
  }
  uint8_t* RsRecv(int lane, int t, size_t k) { return base_ + L_.rs_recv + L_.Index(lane, t, k) * L_.rs_slot; }
  uint8_t* RsSend(int lane, int t, size_t k) { return base_ + L_.rs_send + L_.Index(lane, t, k) * L_.rs_slot; }
  uint8_t* AgRecv(int lane, int t, size_t k) { return base_ + L_.ag_recv + L_.Index(lane, t, k) * L_.ag_slot; }
  uint8_t* AgOwn(int region, size_t k) { return base_ + L_.ag_own + (size_t(region) * L_.m + k) * L_.ag_slot; }
  float* Acc(int region, size_t k) {
    return reinterpret_cast<float*>(base_ + L_.acc) + (size_t(region) * L_.m + k) * L_.micro_elems;
  }
  uint64_t Tag(int phase, int lane, int t, size_t k) const {
    return a_.tag_base |
           ((uint64_t(phase * L_.lanes + lane) * uint64_t(L_.tmax) + uint64_t(t)) * L_.m + k);
  }
  // The staged f32 copy of the contribution: e5m2-cast for naive fp8, send + residual with
  // error feedback (read through io_.Local).
  float* Staged() const { return reinterpret_cast<float*>(base_ + L_.staged); }
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
    return algo::ForEachStep(p_, r_, n_, L_.m, phase, chunk, fn);
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

  Status Body() {
    if (p_.precast_e5m2) {
      // Contributions cast to e5m2 (and back to f32, exactly) before anything is summed.
      float* pre = Staged();
      uint8_t* tmp = RsSend(0, 0, 0);  // reuse: the e5m2 image, one microshard slot at a time
      const size_t chunk = L_.rs_slot;
      for (size_t i = 0; i < a_.count; i += chunk) {
        const size_t c = std::min(chunk, a_.count - i);
        io_.Encode(p_.rs_wire, a_.dtype, static_cast<const uint8_t*>(a_.send) + i * esize_, c, tmp);
        io_.Decode(p_.rs_wire, tmp, c, DType::kFloat32, pre + i);
      }
    }
    if (a_.residual) io_.StageResidual();
    EQUARX_RETURN_IF_ERROR(PostReceives());
    EQUARX_RETURN_IF_ERROR(ReduceScatter());
    for (size_t k = 0; k < L_.m; ++k)
      for (int g = 0; g < p_.num_regions; ++g) EQUARX_RETURN_IF_ERROR(FinishShard(g, k));
    EQUARX_RETURN_IF_ERROR(AllGather());
    EQUARX_RETURN_IF_ERROR(io_.WaitAll());
    if (a_.rotated_nonfinite) *a_.rotated_nonfinite = io_.RotatedNonfinite();
    return Status::Ok();
  }

  const Plan& p_;
  const RunArgs& a_;
  int n_, r_;
  bool staged_;
  Layout L_;
  CallIo io_;
  uint8_t* base_;
  size_t esize_;
};

}  // namespace

Status Execute(const Plan& plan, const RunArgs& args, Scratch* scratch) {
  if (args.transport->size() < 2) return Internal("Execute needs at least 2 ranks");
  if (plan.one_shot) return ExecuteOneShot(plan, args, scratch);
  return Run(plan, args, scratch).Go();
}

uint64_t PlanWireBytes(const Plan& p, int rank, int ranks, size_t microshards) {
  if (ranks < 2) return 0;
  if (p.one_shot) return uint64_t(ranks - 1) * OneShotMessageBytes(p, p.regions[0].count);
  // The executor's own walk over its sends: the RS encodes and the AG's owner sends and
  // forwards, each one message of its microshard's wire bytes.
  uint64_t total = 0;
  auto add = [&](const WireSpec& w) {
    return [&total, w](int, const Lane&, int, size_t, Range mr) {
      total += codec::WireBytes(w, mr.count);
      return Status::Ok();
    };
  };
  (void)ForEachStep(p, rank, ranks, microshards, 0, RsSendChunk, add(p.rs_wire));
  (void)ForEachStep(p, rank, ranks, microshards, 1, AgSendChunk, add(p.ag_wire));
  return total;
}

}  // namespace equarx::algo
