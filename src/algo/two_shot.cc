// equarx `two_shot` — all-to-all reduce-scatter + all-gather: exactly two quantizations.
//
//   RS (one step): rank r encodes its contribution to every shard c != r once and sends it
//   straight to owner c. The owner decodes all N-1 contributions and sums them with its
//   own in a fixed order (rank 0, 1, ..., N-1), in f32.
//
//     r0 -> {r1: x0[s1], r2: x0[s2], r3: x0[s3]}   ...   r1 sums x0[s1]^ + x1[s1] + x2[s1]^ + x3[s1]^
//
//   AG (one step): the owner encodes its final shard once, keeps dequant(quant(x)) itself and
//   sends the same bytes to every other rank, which decode them: all results bitwise equal.
//
// Error: every value is quantized once on its way to the owner (independent errors, each
// <= blockmax/254 of that rank's own contribution, not of a growing partial sum) and the sum
// once more in the AG — two quantizations whatever N, versus N in the full ring. Bytes per
// rank are the same as the rings (2(N-1)/N of the tensor), but each step talks to all N-1
// peers at once: best on switched networks, where no single link is shared by the pairs.
// Sends go to peers in the order r+1, r+2, ... so that every rank starts on a different one.
// Error feedback stages the contribution as f32(send) + residual; each RS encode then adds
// what it lost to the residual, and the owner adds (final sum - its result). A rotation is
// applied where the contribution is read and the result written (CallIo, call_io.h).
#include <algorithm>

#include "algo/call_io.h"
#include "algo/plan.h"
#include "algo/scratch.h"

namespace equarx::algo {

Plan MakeTwoShotPlan(const PlanArgs& a) {
  Plan p = MakeFullPlan(a);
  p.name = "two_shot";
  p.all_to_all = true;
  return p;
}

namespace {

size_t CeilDiv(size_t a, size_t b) { return (a + b - 1) / b; }
size_t Round64(size_t b) { return (b + 63) & ~size_t(63); }

class TwoShot {
 public:
  TwoShot(const Plan& p, const RunArgs& a, Scratch* s)
      : p_(p), a_(a), n_(a.transport->size()), r_(a.transport->rank()), m_(a.microshards),
        micro_elems_(CeilDiv(CeilDiv(CeilDiv(p.regions[0].count, p.granule), size_t(n_)), m_) *
                     p.granule),
        rs_slot_(Round64(codec::WireBytes(p.rs_wire, micro_elems_))),
        ag_slot_(Round64(codec::WireBytes(p.ag_wire, micro_elems_))),
        // per peer and microshard: an RS receive, an RS send, an AG receive; per microshard
        // the own AG image and f32 sum; with error feedback the staged contribution; with
        // error feedback or a rotation CallIo's two temporaries
        io_(a.transport, s, 4 * size_t(n_) * m_, a.deadline, a.mode, a.stats),
        acc_off_(size_t(n_) * m_ * (2 * rs_slot_ + ag_slot_) + m_ * ag_slot_),
        staged_off_(acc_off_ + Round64(m_ * micro_elems_ * sizeof(float))),
        tmp_off_(staged_off_ + (a.residual ? Round64(a.count * sizeof(float)) : 0)),
        base_(s->Bytes(tmp_off_ + (a.residual || a.rotation.block
                                       ? 2 * Round64(micro_elems_ * sizeof(float)) : 0))) {
    io_.Bind(a, a.residual ? Staged() : nullptr,
             a.residual || a.rotation.block ? reinterpret_cast<float*>(base_ + tmp_off_) : nullptr,
             Round64(micro_elems_ * sizeof(float)) / sizeof(float));
  }

  Status Go() {
    if (a_.residual) io_.StageResidual();
    // Receives first: RS contributions to our shard, AG shards of every other owner.
    for (int q = 0; q < n_; ++q) {
      if (q == r_) continue;
      for (size_t k = 0; k < m_; ++k) {
        const Range own = Micro(r_, k), theirs = Micro(q, k);
        if (own.count)
          EQUARX_RETURN_IF_ERROR(io_.Recv(Req(kRsRecv, q, k), q, Tag(0, k), RsRecv(q, k),
                                          codec::WireBytes(p_.rs_wire, own.count)));
        if (theirs.count)
          EQUARX_RETURN_IF_ERROR(io_.Recv(Req(kAgRecv, q, k), q, Tag(1, k), AgRecv(q, k),
                                          codec::WireBytes(p_.ag_wire, theirs.count)));
      }
    }
    // RS: encode each shard once, straight to its owner.
    for (size_t k = 0; k < m_; ++k)
      for (int d = 1; d < n_; ++d) {
        const int c = (r_ + d) % n_;
        const Range mr = Micro(c, k);
        if (mr.count == 0) continue;
        const codec::WireSpec w = HopWire(p_.rs_wire, 0, 0, 0, r_, mr.begin);
        if (a_.residual)
          io_.EncodeWithLoss(w, static_cast<const float*>(io_.Local(mr).data), mr, RsSend(c, k));
        else
          io_.EncodeLocal(w, mr, RsSend(c, k));
        EQUARX_RETURN_IF_ERROR(io_.Send(Req(kRsSend, c, k), c, Tag(0, k), RsSend(c, k),
                                        codec::WireBytes(p_.rs_wire, mr.count)));
      }
    // The owner's sum in rank order, then the AG's single send to everyone.
    for (size_t k = 0; k < m_; ++k) {
      const Range mr = Micro(r_, k);
      if (mr.count == 0) continue;
      float* acc = Acc(k);
      for (int q = 0; q < n_; ++q) {
        if (q == r_) {
          const CallIo::View local = io_.Local(mr);
          if (q == 0) io_.Convert(local.type, local.data, mr.count, DType::kFloat32, acc);
          else  // acc + f32(own contribution), the own bytes read as a raw wire
            io_.DecodeAccumulate(codec::WireSpec{codec::RawFormatOf(local.type), 0},
                                 static_cast<const uint8_t*>(local.data), mr.count,
                                 DType::kFloat32, acc, acc);
          continue;
        }
        EQUARX_RETURN_IF_ERROR(io_.Wait(Req(kRsRecv, q, k)));
        if (q == 0) io_.Decode(p_.rs_wire, RsRecv(q, k), mr.count, DType::kFloat32, acc);
        else io_.DecodeAccumulate(p_.rs_wire, RsRecv(q, k), mr.count, DType::kFloat32, acc, acc);
      }
      uint8_t* own = AgOwn(k);
      io_.Encode(HopWire(p_.ag_wire, 1, 0, 0, r_, mr.begin), DType::kFloat32, acc, mr.count, own);
      io_.DecodeOut(p_.ag_wire, own, mr);
      if (a_.residual) io_.OwnerLoss(mr, acc);
      for (int d = 1; d < n_; ++d) {
        const int c = (r_ + d) % n_;
        EQUARX_RETURN_IF_ERROR(io_.Send(Req(kAgSend, c, k), c, Tag(1, k), own,
                                        codec::WireBytes(p_.ag_wire, mr.count)));
      }
    }
    // AG: decode every other owner's shard.
    for (size_t k = 0; k < m_; ++k)
      for (int d = 1; d < n_; ++d) {
        const int q = (r_ + n_ - d) % n_;
        const Range mr = Micro(q, k);
        if (mr.count == 0) continue;
        EQUARX_RETURN_IF_ERROR(io_.Wait(Req(kAgRecv, q, k)));
        io_.DecodeOut(p_.ag_wire, AgRecv(q, k), mr);
      }
    return io_.WaitAll();
  }

 private:
  enum Kind { kRsRecv = 0, kRsSend = 1, kAgRecv = 2, kAgSend = 3 };

  Range Micro(int owner, size_t k) const {
    return SplitBlocks(SplitBlocks(p_.regions[0], p_.granule, size_t(n_), size_t(owner)),
                       p_.granule, m_, k);
  }
  size_t Req(Kind kind, int peer, size_t k) const {
    return (size_t(kind) * size_t(n_) + size_t(peer)) * m_ + k;
  }
  uint64_t Tag(int phase, size_t k) const { return a_.tag_base | (uint64_t(phase) * m_ + k); }
  size_t Slot(int peer, size_t k) const { return size_t(peer) * m_ + k; }
  uint8_t* RsRecv(int q, size_t k) { return base_ + Slot(q, k) * rs_slot_; }
  uint8_t* RsSend(int c, size_t k) { return base_ + (size_t(n_) * m_ + Slot(c, k)) * rs_slot_; }
  uint8_t* AgRecv(int q, size_t k) {
    return base_ + 2 * size_t(n_) * m_ * rs_slot_ + Slot(q, k) * ag_slot_;
  }
  uint8_t* AgOwn(size_t k) {
    return base_ + size_t(n_) * m_ * (2 * rs_slot_ + ag_slot_) + k * ag_slot_;
  }
  float* Acc(size_t k) { return reinterpret_cast<float*>(base_ + acc_off_) + k * micro_elems_; }
  float* Staged() const { return reinterpret_cast<float*>(base_ + staged_off_); }

  const Plan& p_;
  const RunArgs& a_;
  int n_, r_;
  size_t m_, micro_elems_, rs_slot_, ag_slot_;
  CallIo io_;
  size_t acc_off_, staged_off_, tmp_off_;
  uint8_t* base_;
};

}  // namespace

Status ExecuteTwoShot(const Plan& plan, const RunArgs& args, Scratch* scratch) {
  return TwoShot(plan, args, scratch).Go();
}

uint64_t TwoShotWireBytes(const Plan& p, int rank, int ranks, size_t microshards) {
  uint64_t total = 0;
  for (int c = 0; c < ranks; ++c)
    for (size_t k = 0; k < microshards; ++k) {
      const size_t n = SplitBlocks(SplitBlocks(p.regions[0], p.granule, size_t(ranks), size_t(c)),
                                   p.granule, microshards, k).count;
      if (c != rank) total += codec::WireBytes(p.rs_wire, n);
      else total += uint64_t(ranks - 1) * codec::WireBytes(p.ag_wire, n);
    }
  return total;
}

}  // namespace equarx::algo
