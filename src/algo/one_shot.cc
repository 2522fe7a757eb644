// equarx `one_shot` and `one_shot_raw` — one step: every rank sends its whole contribution to
// every peer.
//
//   rank r:  w_r = code(x_r)            one_shot: the codec, once; one_shot_raw: the dtype as is
//            send w_r to r+1, r+2, ..., r+N-1   (every rank starts on a different peer)
//            receive w_q from every q != r
//            sum = dec(w_0) + dec(w_1) + ... + dec(w_{N-1})   in f32, in rank order (its own
//                  contribution too is read back from its own wire bytes)
//            out = sum, rounded to the dtype
//
//     r0 -> {r1, r2, r3}: w_0       r1 -> {r2, r3, r0}: w_1   ...   every rank: dec(w_0) + ... + dec(w_3)
//
// Every rank decodes the same N wire images and adds them in the same order, so every result
// is bitwise identical. Error: one quantization per contribution and none of the sum
// (two_shot quantizes twice, a ring up to N times); one_shot_raw is exact up to the f32
// additions and the final rounding. Bytes per rank: N - 1 whole coded tensors, N/2 times a
// ring's, but one step of latency instead of 2(N - 1): the schedule for messages where the
// steps cost more than the bytes.
//
// Rotation: the contribution is rotated on its way into the encoder and the f32 sum
// inverse-rotated on its way out (CallIo::EncodeLocal, DecodeOut). The output is written only
// once every message is in, so a call can always be repeated: with a guarded rotation an
// in-place call inverse-rotates into scratch first and copies the result out only when it is
// finite, and error feedback commits the new residual only then (communicator.cc repeats a
// call whose guarded result was NaN or Inf).
// Error feedback: the contribution is f32(x) + residual; the new residual is what the encode
// lost (inverse-rotated) plus, for the rank's own 1/N of the elements (split as the rings
// split their shards), what the final rounding to the dtype lost: every loss counted once.
//
// The call is two halves (OneShotCall) so that the call check (core/validate.h) can travel
// beside it: Start posts every receive and sends, Finish waits and sums, and Drain consumes
// what the peers sent when the check refused the call. One message per peer and call, tag
// OneShotTag(tag_base).
//
// Pieces (bounded scratch): a rank holds N coded contributions and f32 sums of the whole
// call, N times a ring's buffers. A call whose buffers would pass ScratchBound (plan.h) runs
// as P one_shot calls, one after the other, on P pieces of whole blocks (OneShotPieces): each
// element is coded, summed and rounded as in one call, so the results are the same bits.
// Piece i's tag has i in bits 48 and up. A call of several pieces writes piece by piece, so
// it cannot be repeated in place (resolve.cc guards it accordingly) and never starts beside
// the call check; its error feedback counts the final rounding's loss on each piece's
// own 1/N.
#include <algorithm>
#include <cstring>

#include "algo/call_io.h"
#include "algo/one_shot.h"
#include "algo/scratch.h"

namespace equarx::algo {

namespace {
size_t Round64(size_t b) { return (b + 63) & ~size_t(63); }
}  // namespace

Plan MakeOneShotPlan(const PlanArgs& a) {
  Plan p;
  p.name = "one_shot";
  p.one_shot = true;
  p.num_rs = p.num_ag = 0;
  p.regions[0] = Range{0, a.count};
  p.rs_wire = a.quantized;
  p.ag_wire = codec::WireSpec{codec::Format::kRawF32, 0};  // the f32 sum, read as a wire
  p.granule = a.quantized.block;
  return p;
}

Plan MakeOneShotRawPlan(const PlanArgs& a) {
  Plan p = MakeOneShotPlan(a);
  p.name = "one_shot_raw";
  p.rs_wire = a.RawAg();  // the dtype as it is
  p.granule = a.rotation_block ? a.rotation_block : kDefaultBlock;
  return p;
}

uint64_t OneShotMessageBytes(const Plan& plan, size_t count) { return codec::WireBytes(plan.rs_wire, count); }

namespace {

// The wire images a call holds: every rank's, or recursive_doubling's own and received one.
int Slots(const Plan& p, int n) { return p.recursive_doubling ? 2 : n; }

// Scratch of a one_shot call of `count` elements on n ranks, with every option that adds a
// buffer on (OneShotCall's layout).
size_t OneShotScratch(const Plan& p, int n, size_t count) {
  return size_t(Slots(p, n)) * Round64(size_t(OneShotMessageBytes(p, count))) + 5 * Round64(count * sizeof(float)) +
         Round64(count * DTypeSize(p.dtype));
}

Range Piece(const Plan& p, size_t pieces, size_t i) { return SplitBlocks(Range{0, PlanCount(p)}, p.granule, pieces, i); }

}  // namespace

size_t OneShotPieces(const Plan& p, int n, size_t floor) {
  const size_t count = PlanCount(p), bound = ScratchBound(p, floor);
  const size_t blocks = std::max<size_t>(1, (count + p.granule - 1) / p.granule);
  return FewestParts(bound, blocks, [&](size_t k) {
    return OneShotScratch(p, n, k == 1 ? count : (blocks + k - 1) / k * p.granule);
  });
}

uint64_t OneShotWireBytes(const Plan& p, int n, size_t floor) { return OneShotWireBytes(p, n, floor, n - 1); }

uint64_t OneShotWireBytes(const Plan& p, int n, size_t floor, int messages) {
  const size_t pieces = OneShotPieces(p, n, floor);
  uint64_t bytes = 0;
  for (size_t i = 0; i < pieces; ++i) bytes += OneShotMessageBytes(p, Piece(p, pieces, i).count);
  return uint64_t(messages) * bytes;
}

// The call's buffers in scratch: the N wire images, the f32 sum, the rotation's (or error
// feedback's) temporaries, error feedback's staged contribution and loss, and the output when
// it is copied out at the end.
OneShotCall::Buffers OneShotCall::Lay(const RunArgs& a, Scratch* s, int n, size_t slot, bool copy_out) {
  const size_t f32 = Round64(a.count * sizeof(float));
  const bool tmp = a.rotation.block || a.residual;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t b = at;
    at += bytes;
    return b;
  };
  const size_t slots_at = take(size_t(n) * slot), acc_at = take(f32), tmp_at = take(tmp ? 2 * f32 : 0),
               staged_at = take(a.residual ? f32 : 0), loss_at = take(a.residual ? f32 : 0),
               out_at = take(copy_out ? Round64(a.count * DTypeSize(a.dtype)) : 0);
  uint8_t* base = s->Bytes(at);
  Buffers b;
  b.slots = base + slots_at;
  b.acc = reinterpret_cast<float*>(base + acc_at);
  if (tmp) b.tmp = reinterpret_cast<float*>(base + tmp_at);
  if (a.residual) {
    b.staged = reinterpret_cast<float*>(base + staged_at);
    b.loss = reinterpret_cast<float*>(base + loss_at);
  }
  if (copy_out) b.out = base + out_at;
  return b;
}

RunArgs OneShotCall::Bound(const RunArgs& a, void* out) {
  RunArgs b = a;
  if (out) b.recv = out;
  return b;
}

OneShotCall::OneShotCall(const Plan& plan, const RunArgs& a, Scratch* s, size_t first)
    : plan_(plan), args_(a), n_(a.transport->size()), r_(a.transport->rank()), first_(first),
      msg_(OneShotMessageBytes(plan, a.count)), slot_(Round64(size_t(msg_))), esize_(DTypeSize(a.dtype)),
      copy_out_(a.rotation.guard && a.send == a.recv), buf_(Lay(a, s, Slots(plan, n_), slot_, copy_out_)),
      bound_(Bound(a, buf_.out)), io_(s, 2 * size_t(n_), bound_, buf_.staged, buf_.tmp, a.count) {}

// Requests: 2q receives from peer q, 2q + 1 sends to it.
Status OneShotCall::Start(bool leave_tree_partners) {
  const RunArgs& a = args_;
  const uint64_t tag = OneShotTag(a.tag_base);
  started_ = true;
  for (int d = 1; d < n_ && !plan_.recursive_doubling; ++d) {
    const int q = Mod(r_ - d, n_);
    EQUARX_RETURN_IF_ERROR(io_.Recv(2 * size_t(q), q, tag, Slot(q), msg_));
  }
  uint8_t* own = Own();
  const codec::WireSpec w = HopWire(plan_.rs_wire, 0, 0, 0, r_, first_);
  if (a.residual) {
    // staged <- f32(x) + residual (rotated); loss <- staged - dec(code(staged)) (unrotated)
    codec::DecodeAccumulate(codec::WireSpec{codec::RawFormatOf(a.dtype), 0},
                            static_cast<const uint8_t*>(a.send), a.count, DType::kFloat32, a.residual,
                            buf_.staged);
    if (a.rotation.block)
      codec::RotateForward(a.rotation, DType::kFloat32, buf_.staged, a.count, a.element_offset, buf_.staged);
    io_.Encode(w, DType::kFloat32, buf_.staged, a.count, own);
    io_.Decode(w, own, a.count, DType::kFloat32, buf_.acc);
    std::fill(buf_.loss, buf_.loss + a.count, 0.0f);
    codec::AccumulateLoss(DType::kFloat32, buf_.acc, buf_.staged, a.count, buf_.loss);
    if (a.rotation.block)
      codec::RotateInverse(a.rotation, buf_.loss, a.count, a.element_offset, DType::kFloat32, buf_.loss);
  } else {
    io_.EncodeLocal(w, Range{0, a.count}, own);
    // recursive_doubling: the f32 partial sum starts as the contribution
    if (plan_.recursive_doubling) io_.Decode(w, own, a.count, DType::kFloat32, buf_.acc);
  }
  for (int d = 1; d < n_ && !plan_.recursive_doubling; ++d) {
    const int q = Mod(r_ + d, n_), x = q ^ r_;
    if (leave_tree_partners && x >= 2 && IsPowerOfTwo(x)) continue;
    EQUARX_RETURN_IF_ERROR(io_.Send(2 * size_t(q) + 1, q, tag, own, msg_));
  }
  return Status::Ok();
}

Status OneShotCall::SendTo(int q) { return io_.Send(2 * size_t(q) + 1, q, OneShotTag(args_.tag_base), Own(), msg_); }

Status OneShotCall::Finish() {
  const RunArgs& a = args_;
  if (!started_) EQUARX_RETURN_IF_ERROR(Start());
  if (plan_.recursive_doubling) {
    if (!steps_ran_) EQUARX_RETURN_IF_ERROR(RunSteps());
  } else {
    EQUARX_RETURN_IF_ERROR(io_.WaitAll());
    // The sum in rank order, every contribution read from its wire bytes.
    for (int q = 0; q < n_; ++q) {
      if (q == 0) io_.Decode(plan_.rs_wire, Slot(q), a.count, DType::kFloat32, buf_.acc);
      else io_.DecodeAccumulate(plan_.rs_wire, Slot(q), a.count, DType::kFloat32, buf_.acc, buf_.acc);
    }
  }
  const Range all{0, a.count};
  io_.DecodeOut(plan_.ag_wire, reinterpret_cast<const uint8_t*>(buf_.acc), all);
  const bool repeat = a.rotation.guard && io_.RotatedNonfinite();
  if (a.rotated_nonfinite) *a.rotated_nonfinite = repeat;
  if (repeat) return Status::Ok();  // nothing written: the caller repeats the call
  if (copy_out_) std::memcpy(a.recv, bound_.recv, a.count * esize_);
  if (a.residual) {
    // The rank's own elements also carry the final rounding's loss (the sum in the
    // unrotated domain, exact - rounded).
    const Range mine = SplitBlocks(all, plan_.granule, size_t(n_), size_t(r_));
    float* sum = buf_.acc + mine.begin;
    if (a.rotation.block)
      codec::RotateInverse(a.rotation, sum, mine.count, mine.begin + a.element_offset, DType::kFloat32, sum);
    std::memcpy(a.residual, buf_.loss, a.count * sizeof(float));
    codec::AccumulateLoss(a.dtype, static_cast<uint8_t*>(a.recv) + mine.begin * esize_, sum, mine.count,
                          a.residual + mine.begin);
  }
  return Status::Ok();
}

Status OneShotCall::Drain(const uint64_t* peer_bytes) {
  Status first;
  for (int q = 0; q < n_ && started_; ++q) {
    if (q == r_) continue;
    for (size_t i : {2 * size_t(q), 2 * size_t(q) + 1}) {
      // A receive from a peer that sent nothing would never complete: withdrawn.
      if (i % 2 == 0 && peer_bytes[q] == 0) continue;
      const Status st = io_.Wait(i);
      if (!st.ok() && st.code() != StatusCode::kMismatch && first.ok()) first = st;
    }
  }
  io_.CancelAll();
  return first;
}

Status DrainOneShot(transport::Transport* t, uint64_t tag_base, transport::Deadline deadline,
                    const uint64_t* peer_bytes, Scratch* scratch) {
  const int n = t->size(), me = t->rank();
  size_t total = 0;
  for (int q = 0; q < n; ++q) total += q == me ? 0 : Round64(size_t(peer_bytes[q]));
  if (total == 0) return Status::Ok();
  uint8_t* sink = scratch->Bytes(total);
  RequestSet io(t, scratch, size_t(n), deadline);
  for (int q = 0; q < n; ++q) {
    if (q == me || peer_bytes[q] == 0) continue;
    EQUARX_RETURN_IF_ERROR(io.Recv(size_t(q), q, OneShotTag(tag_base), sink, size_t(peer_bytes[q])));
    sink += Round64(size_t(peer_bytes[q]));
  }
  return io.WaitAll();
}

Status ExecuteOneShot(const Plan& plan, const RunArgs& args, Scratch* scratch) {
  const size_t pieces = OneShotPieces(plan, args.transport->size(), args.scratch_floor);
  if (pieces == 1) return OneShotCall(plan, args, scratch).Finish();
  const size_t es = DTypeSize(args.dtype);
  bool nonfinite = false;
  for (size_t i = 0; i < pieces; ++i) {
    const Range r = Piece(plan, pieces, i);
    RunArgs a = args;
    a.send = static_cast<const uint8_t*>(args.send) + r.begin * es;
    a.recv = static_cast<uint8_t*>(args.recv) + r.begin * es;
    a.count = r.count;
    a.element_offset = args.element_offset + r.begin;
    if (args.residual) a.residual = args.residual + r.begin;
    a.tag_base = args.tag_base ^ (uint64_t(i) << 48);
    a.rotated_nonfinite = &nonfinite;
    EQUARX_RETURN_IF_ERROR(OneShotCall(plan, a, scratch, r.begin).Finish());
    // A guarded piece whose result is not finite wrote nothing; the call is repeated whole.
    if (nonfinite) break;
  }
  if (args.rotated_nonfinite) *args.rotated_nonfinite = nonfinite;
  return Status::Ok();
}

}  // namespace equarx::algo
