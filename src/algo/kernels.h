// equarx kernels: the codec kernels (codec/codec.h) one collective call runs, on the codec
// threads' pool, with the call's telemetry — skipped in the diagnostic wire-only mode.
//
// Threads (RunArgs::pool, option `threads`): each kernel call on a segment of at least
// 2 * kMinPartElems elements is cut into up to T parts on block boundaries (codec::PartOf;
// rotation blocks for the rotation), run on the pool. Every part writes its own bytes of the
// same wire image and output, so the results are the same bits for every T; only the f64
// telemetry sums are added part by part (equal up to rounding). Every encode adds its
// telemetry to the call's stats (when asked for).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "algo/parts.h"
#include "codec/codec.h"
#include "common/worker_pool.h"
#include "equarx/options.h"

namespace equarx::algo {

class Kernels {
 public:
  Kernels(common::WorkerPool* pool, codec::EncodeStats* stats, bool codec_on)
      : pool_(pool), stats_(stats), codec_on_(codec_on) {}

  bool codec_on() const { return codec_on_; }
  codec::EncodeStats* stats() const { return stats_; }

  void Encode(const codec::WireSpec& w, DType t, const void* src, size_t n, uint8_t* wire) {
    if (!codec_on_) return;
    ForParts(codec::PartGranule(w), n, stats_, [&](Range p, codec::EncodeStats* st) {
      const codec::WirePart wp = PartSpec(w, n, p);
      codec::Encode(wp.spec, t, At(src, t, p.begin), p.count, wire + wp.wire_at, st);
    });
  }
  void DecodeAccumulateEncode(const codec::WireSpec& w, const uint8_t* in, size_t n, DType t,
                              const void* local, uint8_t* out) {
    if (!codec_on_) return;
    ForParts(codec::PartGranule(w), n, stats_, [&](Range p, codec::EncodeStats* st) {
      const codec::WirePart wp = PartSpec(w, n, p);
      codec::DecodeAccumulateEncode(wp.spec, in + wp.wire_at, p.count, t, At(local, t, p.begin),
                                    out + wp.wire_at, st);
    });
  }
  void Decode(const codec::WireSpec& w, const uint8_t* wire, size_t n, DType t, void* dst) {
    if (!codec_on_) return;
    ForParts(codec::PartGranule(w), n, nullptr, [&](Range p, codec::EncodeStats*) {
      const codec::WirePart wp = PartSpec(w, n, p);
      codec::Decode(wp.spec, wire + wp.wire_at, p.count, t, At(dst, t, p.begin));
    });
  }
  void DecodeAccumulate(const codec::WireSpec& w, const uint8_t* wire, size_t n, DType t,
                        const void* local, float* out) {
    if (!codec_on_) return;
    ForParts(codec::PartGranule(w), n, nullptr, [&](Range p, codec::EncodeStats*) {
      const codec::WirePart wp = PartSpec(w, n, p);
      codec::DecodeAccumulate(wp.spec, wire + wp.wire_at, p.count, t, At(local, t, p.begin),
                              out + p.begin);
    });
  }
  void Convert(DType from, const void* src, size_t n, DType to, void* dst) {
    if (!codec_on_) return;
    ForParts(1, n, nullptr, [&](Range p, codec::EncodeStats*) {
      codec::Convert(from, At(src, from, p.begin), p.count, to, At(dst, to, p.begin));
    });
  }

  // fn(part, stats of the part) for the parts of n elements cut on `granule` boundaries
  // (parts.h): the whole on this thread without a pool or for small n, else up to T parts on
  // the pool, whose telemetry is added to *stats in part order.
  template <class Fn>
  void ForParts(size_t granule, size_t n, codec::EncodeStats* stats, Fn fn) {
    const size_t parts = PartCount(pool_, n);
    if (parts < 2) return fn(Range{0, n}, stats);
    codec::EncodeStats part_stats[kMaxThreads];
    ForEachPart(pool_, granule, n, parts,
                [&](Range p, size_t i) { fn(p, stats ? &part_stats[i] : nullptr); });
    if (!stats) return;
    for (size_t i = 0; i < parts; ++i) {
      const codec::EncodeStats& s = part_stats[i];
      stats->clipped += s.clipped;
      stats->sum_sq_err_est += s.sum_sq_err_est;
      stats->max_abs_err_est = std::max(stats->max_abs_err_est, s.max_abs_err_est);
      stats->values += s.values;
      stats->sum_sq_values += s.sum_sq_values;
    }
  }

  static const void* At(const void* p, DType t, size_t i) {
    return static_cast<const uint8_t*>(p) + i * DTypeSize(t);
  }
  static void* At(void* p, DType t, size_t i) { return static_cast<uint8_t*>(p) + i * DTypeSize(t); }
  // The part's spec and wire offset (the whole segment as it is when p is all of it).
  static codec::WirePart PartSpec(const codec::WireSpec& w, size_t n, Range p) {
    if (p.begin == 0 && p.count == n) return codec::WirePart{w, 0};
    return codec::PartOf(w, n, p.begin);
  }

 private:
  common::WorkerPool* pool_;
  codec::EncodeStats* stats_;
  bool codec_on_;
};

}  // namespace equarx::algo
