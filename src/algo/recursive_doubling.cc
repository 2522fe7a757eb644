// equarx `recursive_doubling` — unquantized, log2 N steps of one message each.
//
//   rank r:  s = f32(x_r)                     (rotated when a rotation is on)
//            step k = 0 .. K-1 (N = 2^K): send s to p = r ^ 2^k, receive s_p;
//                                             s = s_lo + s_hi   (the lower rank's sum first)
//            out = s, rounded to the dtype
//
//     N = 4:   step 0: r0 <-> r1, r2 <-> r3     s = x0 + x1 on r0, r1; x2 + x3 on r2, r3
//              step 1: r0 <-> r2, r1 <-> r3     s = (x0 + x1) + (x2 + x3) on every rank
//
// After step k the 2^(k+1) ranks of each aligned group hold the same bits: both ranks of a
// pair add the same two partial sums in the same order. Every result is therefore bitwise
// identical. Error: exact f32 additions in a tree and one final rounding to the dtype (as
// one_shot_raw, whose additions run in rank order instead). Bytes per rank: K whole f32
// tensors; latency: K steps of one message, where one_shot sends N - 1 messages in one step
// and a ring 2(N - 1) messages in 2(N - 1) steps: the schedule for the smallest messages.
//
// N not a power of two (P = the largest power of two below N): rank P + i first sends its
// contribution to rank i, which adds it (its own first); ranks 0 .. P-1 run the K steps;
// rank i sends the sum back to rank P + i. Two steps more, on the N - P extra ranks' pairs.
//
// The call is a one_shot call (one_shot.cc) with another exchange: the contribution, error
// feedback (no encode loses anything; each rank's own 1/N carries the final rounding's loss),
// the rotation, pieces and the output are one_shot's. Step s's message has tag
// RecursiveDoublingTag(tag_base, s). The call check of a group of 2^K ranks has the same
// pairs, so with validate on it runs the K steps beside its own (core/validate.h, CheckTree):
// the data leaves with the check, in the same K messages.
#include <cstring>

#include "algo/one_shot.h"
#include "algo/scratch.h"

namespace equarx::algo {

Plan MakeRecursiveDoublingPlan(const PlanArgs& a) {
  Plan p = MakeOneShotPlan(a);
  p.name = "recursive_doubling";
  p.recursive_doubling = true;
  p.rs_wire = codec::WireSpec{codec::Format::kRawF32, 0};  // the f32 partial sums
  p.granule = a.rotation_block ? a.rotation_block : kDefaultBlock;
  return p;
}

uint64_t RecursiveDoublingWireBytes(const Plan& p, int rank, int n, size_t floor) {
  const int P = PowerOfTwoBelow(n);
  int messages = Log2(P);             // the K steps
  if (rank >= P) messages = 1;        // an extra rank sends its contribution only
  else if (rank < n - P) ++messages;  // and gets the sum from its partner
  return OneShotWireBytes(p, n, floor, messages);
}

// Requests: 0 receives, 1 sends (one step at a time).
Status OneShotCall::PostStep(int k, int partner) {
  return io_.Recv(0, partner, RecursiveDoublingTag(args_.tag_base, k), Slot(1), msg_);
}

Status OneShotCall::SendStep(int k, int partner) {
  return io_.Send(1, partner, RecursiveDoublingTag(args_.tag_base, k), buf_.acc, msg_);
}

void OneShotCall::Add(int partner) {
  const float* in = reinterpret_cast<const float*>(Slot(1));
  float* s = buf_.acc;
  if (r_ < partner) {
    for (size_t i = 0; i < args_.count; ++i) s[i] = s[i] + in[i];
  } else {
    for (size_t i = 0; i < args_.count; ++i) s[i] = in[i] + s[i];
  }
}

namespace {
// A refused step's messages may differ in length from what the partner expects (its call
// differs): that is the refusal's cause, not a failure of its own.
Status Refused(const Status& st) { return st.code() == StatusCode::kMismatch ? Status::Ok() : st; }
}  // namespace

Status OneShotCall::FinishStep(int partner, bool add) {
  const Status got = io_.Wait(0);
  const Status sent = io_.Wait(1);  // the partial sum is sent before it changes
  if (!add) {
    EQUARX_RETURN_IF_ERROR(Refused(got));
    return Refused(sent);
  }
  EQUARX_RETURN_IF_ERROR(got);
  EQUARX_RETURN_IF_ERROR(sent);
  if (io_.codec_on()) Add(partner);
  return Status::Ok();
}

Status OneShotCall::WithdrawStep() {
  io_.Cancel(0);
  return Refused(io_.Wait(1));
}

Status OneShotCall::RunSteps() {
  const int P = PowerOfTwoBelow(n_), K = Log2(P);
  // Tags: with extra ranks the pre-step is step 0, the K steps 1 .. K, the post-step K + 1.
  const int first = n_ > P ? 1 : 0;
  auto trade = [&](int step, int partner, bool send, bool recv, bool add) -> Status {
    if (recv) EQUARX_RETURN_IF_ERROR(PostStep(step, partner));
    if (send) EQUARX_RETURN_IF_ERROR(SendStep(step, partner));
    const Status got = io_.Wait(0);
    EQUARX_RETURN_IF_ERROR(io_.Wait(1));
    EQUARX_RETURN_IF_ERROR(got);
    if (add && io_.codec_on()) Add(partner);
    return Status::Ok();
  };
  if (r_ >= P) {  // an extra rank: its contribution out, the sum back
    EQUARX_RETURN_IF_ERROR(trade(0, r_ - P, true, false, false));
    EQUARX_RETURN_IF_ERROR(trade(first + K, r_ - P, false, true, false));
    if (io_.codec_on()) std::memcpy(buf_.acc, Slot(1), msg_);
  } else {
    const bool paired = r_ < n_ - P;
    if (paired) EQUARX_RETURN_IF_ERROR(trade(0, r_ + P, false, true, true));
    for (int k = 0; k < K; ++k) EQUARX_RETURN_IF_ERROR(trade(first + k, r_ ^ (1 << k), true, true, true));
    if (paired) EQUARX_RETURN_IF_ERROR(trade(first + K, r_ + P, true, false, false));
  }
  steps_ran_ = true;
  return Status::Ok();
}

}  // namespace equarx::algo
