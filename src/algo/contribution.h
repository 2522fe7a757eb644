// equarx contribution and result: this rank's contribution and result as a schedule sees them.
//
// A schedule reads this rank's contribution for a segment through Local() and writes decoded
// results through DecodeOut(). With error feedback (or naive fp8's precast) the contribution
// is a staged f32 copy (of the whole tensor, or of the segments a schedule points to with
// StageAt). With a rotation (RunArgs::rotation) the contribution is forward-rotated into a
// segment-sized f32 temporary (or the staged copy was rotated once), and DecodeOut() decodes
// into f32 and inverse-rotates into the output: every element is rotated once on the way in
// and once on the way out, and the schedule in between works in the rotated domain.
// EncodeLocal / DecodeAccumulateEncodeLocal and DecodeOut rotate tile by tile (ForTiles), so
// the temporary's tile is still in cache when the next kernel reads it.
// Segments start on block boundaries, which are the rotation's block boundaries. Error
// feedback keeps the residual in the caller's (unrotated) domain: every loss is
// inverse-rotated before it is added. A guarded rotation (codec.h, RotationSpec::guard)
// turns a block with an input the rotation must not see into NaN on the way in, and
// DecodeOut notes a NaN or Inf result on the way out (RotatedNonfinite), so that the caller
// can repeat the call unrotated (communicator.cc). The kernels run through the call's Kernels
// (kernels.h: threads, telemetry, the wire-only mode).
#pragma once

#include <algorithm>
#include <atomic>
#include <numeric>

#include "algo/kernels.h"
#include "algo/plan.h"
#include "codec/codec.h"

namespace equarx::algo {

class Contribution {
 public:
  /// The call `a`'s contribution and result. `staged`: f32 scratch for the contribution of
  /// elements 0 .. (count - 1) when it is staged (error feedback, naive fp8), else null
  /// (StageAt moves it); `tmp`: two segment-sized f32 temporaries of `tmp_elems` each when a
  /// rotation or error feedback is on, else null.
  Contribution(Kernels& k, const RunArgs& a, float* staged, float* tmp, size_t tmp_elems)
      : k_(k), args_(&a), staged_(staged), tmp_{tmp, tmp ? tmp + tmp_elems : nullptr},
        rotate_(a.rotation.block != 0) {}
  Contribution(const Contribution&) = delete;
  Contribution& operator=(const Contribution&) = delete;

  /// The staged contribution is read from `staged` for the segments that start at element
  /// `begin` (a schedule that stages one segment at a time points here before each).
  void StageAt(float* staged, size_t begin) {
    staged_ = staged;
    staged_begin_ = begin;
  }
  struct View {
    const void* data;
    DType type;
  };
  /// This rank's contribution to segment r, as the encoders should read it.
  View Local(Range r) {
    if (staged_) return {Staged(r), DType::kFloat32};
    const void* src = static_cast<const uint8_t*>(args_->send) + r.begin * DTypeSize(args_->dtype);
    if (!rotate_) return {src, args_->dtype};
    if (!k_.codec_on()) return {tmp_[0], DType::kFloat32};
    k_.ForParts(args_->rotation.block, r.count, nullptr, [&](Range p, codec::EncodeStats*) {
      codec::RotateForward(args_->rotation, args_->dtype, Kernels::At(src, args_->dtype, p.begin), p.count,
                           r.begin + p.begin + args_->element_offset, tmp_[0] + p.begin);
    });
    return {tmp_[0], DType::kFloat32};
  }
  /// The output elements of segment r (in the call's dtype).
  void* Out(Range r) const {
    return static_cast<uint8_t*>(args_->recv) + r.begin * DTypeSize(args_->dtype);
  }
  /// wire <- encode(this rank's contribution to segment r): Encode of Local(r), with a
  /// rotation done tile by tile (RotatedTiles).
  void EncodeLocal(const codec::WireSpec& w, Range r, uint8_t* wire) {
    if (!rotate_ || staged_) {
      const View v = Local(r);
      return k_.Encode(w, v.type, v.data, r.count, wire);
    }
    if (!k_.codec_on()) return;
    RotatedTiles(w, r, [&](Range q, const codec::WirePart& wp, const float* x, codec::EncodeStats* st) {
      codec::Encode(wp.spec, DType::kFloat32, x, q.count, wire + wp.wire_at, st);
    });
  }
  /// out <- encode(decode(in) + this rank's contribution to segment r): DecodeAccumulateEncode
  /// with Local(r), with a rotation done tile by tile (RotatedTiles).
  void DecodeAccumulateEncodeLocal(const codec::WireSpec& w, const uint8_t* in, Range r, uint8_t* out) {
    if (!rotate_ || staged_) {
      const View v = Local(r);
      return k_.DecodeAccumulateEncode(w, in, r.count, v.type, v.data, out);
    }
    if (!k_.codec_on()) return;
    RotatedTiles(w, r, [&](Range q, const codec::WirePart& wp, const float* x, codec::EncodeStats* st) {
      codec::DecodeAccumulateEncode(wp.spec, in + wp.wire_at, q.count, DType::kFloat32, x,
                                    out + wp.wire_at, st);
    });
  }
  /// out[r] <- decode(wire), inverse-rotated when a rotation is on (tile by tile: each tile is
  /// decoded into the temporary and inverse-rotated while it is in cache). A guarded rotation
  /// notes whether a result was NaN or Inf (RotatedNonfinite).
  void DecodeOut(const codec::WireSpec& w, const uint8_t* wire, Range r) {
    if (!k_.codec_on()) return;
    if (!rotate_) return k_.Decode(w, wire, r.count, args_->dtype, Out(r));
    ForTiles(w, r.count, nullptr, [&](Range q, codec::EncodeStats*) {
      const codec::WirePart wp = Kernels::PartSpec(w, r.count, q);
      codec::Decode(wp.spec, wire + wp.wire_at, q.count, DType::kFloat32, tmp_[0] + q.begin);
      if (codec::RotateInverse(args_->rotation, tmp_[0] + q.begin, q.count,
                               r.begin + q.begin + args_->element_offset, args_->dtype,
                               Kernels::At(Out(r), args_->dtype, q.begin)))
        nonfinite_.store(true, std::memory_order_relaxed);
    });
  }
  /// Whether a guarded rotation's inverse gave a NaN or Inf result (DecodeOut) so far.
  bool RotatedNonfinite() const { return nonfinite_.load(std::memory_order_relaxed); }
  /// Error feedback, for segment r: staged <- f32(send) + residual (rotated when a rotation is
  /// on), then residual <- 0: the call's contribution, to which every encode of this rank adds
  /// back what it loses (EncodeWithLoss, OwnerLoss).
  void StageResidual(Range r) {
    if (r.count == 0) return;
    float* staged = Staged(r);
    codec::DecodeAccumulate(codec::WireSpec{codec::RawFormatOf(args_->dtype), 0},
                            static_cast<const uint8_t*>(Kernels::At(args_->send, args_->dtype, r.begin)), r.count, DType::kFloat32,
                            args_->residual + r.begin, staged);
    std::fill(args_->residual + r.begin, args_->residual + r.end(), 0.0f);
    if (rotate_)
      codec::RotateForward(args_->rotation, DType::kFloat32, staged, r.count, r.begin + args_->element_offset, staged);
  }
  /// wire <- encode(exact) for segment r; residual += what the encode lost (exact - decoded,
  /// inverse-rotated when a rotation is on).
  void EncodeWithLoss(const codec::WireSpec& w, const float* exact, Range r, uint8_t* wire) {
    k_.Encode(w, DType::kFloat32, exact, r.count, wire);
    float* residual = args_->residual + r.begin;
    codec::Decode(w, wire, r.count, DType::kFloat32, tmp_[0]);
    if (!rotate_) return codec::AccumulateLoss(DType::kFloat32, tmp_[0], exact, r.count, residual);
    std::fill(tmp_[1], tmp_[1] + r.count, 0.0f);
    codec::AccumulateLoss(DType::kFloat32, tmp_[0], exact, r.count, tmp_[1]);
    codec::RotateInverse(args_->rotation, tmp_[1], r.count, r.begin + args_->element_offset, DType::kFloat32, tmp_[1]);
    for (size_t i = 0; i < r.count; ++i) residual[i] += tmp_[1][i];
  }
  /// residual += exact - result for the owner's segment r (`exact`, the f32 sum in the
  /// schedule's domain, is inverse-rotated in place first when a rotation is on).
  void OwnerLoss(Range r, float* exact) {
    if (rotate_) codec::RotateInverse(args_->rotation, exact, r.count, r.begin + args_->element_offset, DType::kFloat32, exact);
    codec::AccumulateLoss(args_->dtype, Out(r), exact, r.count, args_->residual + r.begin);
  }

 private:
  float* Staged(Range r) const { return staged_ + (r.begin - staged_begin_); }
  // fn(tile, stats of its part) for the tiles of a segment of n elements under a rotation:
  // the parts (ForParts, cut on whole codec and rotation blocks) cut again into tiles of
  // about kRotationTile elements, in order, so that what one kernel writes to the f32
  // temporary is still in cache when the next reads it. The bits are those of one call on the
  // whole segment (parts, codec.h); tiles of one part add their telemetry in element order.
  static constexpr size_t kRotationTile = 8192;
  template <class Fn>
  void ForTiles(const codec::WireSpec& w, size_t n, codec::EncodeStats* stats, Fn fn) {
    const size_t granule = std::lcm(codec::PartGranule(w), size_t(args_->rotation.block));
    const size_t tile = std::max(granule, kRotationTile / granule * granule);
    k_.ForParts(granule, n, stats, [&](Range p, codec::EncodeStats* st) {
      for (size_t b = p.begin; b < p.end(); b += tile) fn(Range{b, std::min(tile, p.end() - b)}, st);
    });
  }
  // fn(tile, its wire part, the tile's contribution forward-rotated into the temporary,
  // stats) for the tiles of segment r (ForTiles).
  template <class Fn>
  void RotatedTiles(const codec::WireSpec& w, Range r, Fn fn) {
    const DType t = args_->dtype;
    const void* src = Kernels::At(args_->send, t, r.begin);
    ForTiles(w, r.count, k_.stats(), [&](Range q, codec::EncodeStats* st) {
      float* x = tmp_[0] + q.begin;
      codec::RotateForward(args_->rotation, t, Kernels::At(src, t, q.begin), q.count,
                           r.begin + q.begin + args_->element_offset, x);
      fn(q, Kernels::PartSpec(w, r.count, q), x, st);
    });
  }

  Kernels& k_;
  const RunArgs* args_;
  float* staged_;
  size_t staged_begin_ = 0;  // the element staged_[0] holds
  float* tmp_[2];
  bool rotate_;
  std::atomic<bool> nonfinite_{false};  // set from the pool's threads (DecodeOut)
};

}  // namespace equarx::algo
