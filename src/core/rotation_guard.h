// equarx rotation guard — keeps the rotation away from inputs it must not see.
//
// A rotation would spread a NaN or Inf over its whole block, and |x| >= 2^100 can overflow in
// the rotated domain: a call with such an input on any rank runs unrotated on every rank. Each
// rank learns it in one of two ways (validate on; without it nothing is checked):
//  - a rank whose call can be repeated (algo::RotationGuard::kGuarded: resolve.h says when)
//    does not read its input first (kUnscanned). If every rank is such, the call rotates
//    guarded (codec.h: a block with such an input comes out NaN) and, where a result is NaN or
//    Inf, is repeated unrotated. Every rank inverse-rotates every element of the same wire
//    bytes, so every rank sees the same and repeats or not;
//  - any other rank checks its input before the exchange (kCheckFirst: kSafe or kUnsafe).
// A kUnsafe anywhere: unrotated. kSafe and kUnscanned mixed: the unscanned ranks check now
// and a second exchange settles it (Settle says so).
#pragma once

#include <cstddef>
#include <cstdint>

#include "equarx/types.h"

namespace equarx::algo {
enum class RotationGuard : uint8_t;
}

namespace equarx::core {

struct Descriptor;

/// What a rank's descriptor says of its input (Descriptor::rotation_input).
enum class RotationInput : uint8_t {
  kSafe = 0,       ///< checked: the rotation may see it (or the call does not rotate)
  kUnsafe = 1,     ///< checked: it holds a value the rotation must not see
  kUnscanned = 2,  ///< not checked: this rank rotates guarded
};

/// Whether `count` values of `dtype` at `x` (and the f32 `residual`, when not null) may be
/// rotated.
RotationInput CheckInput(DType dtype, const void* x, const float* residual, size_t count);

/// What this rank says before the first exchange.
RotationInput Announce(algo::RotationGuard guard, DType dtype, const void* send, const float* residual,
                       size_t count);

/// What the exchanged descriptors decide for a call that would rotate.
struct RotationVerdict {
  bool rotate = false;
  bool guard = false;  ///< rotate guarded (every rank unscanned)
  bool again = false;  ///< mixed: unscanned ranks check now, and every rank exchanges again
};
RotationVerdict Settle(bool rotate, const Descriptor* all, size_t ranks);
/// The same from the set of the ranks' inputs, as bits InputBit(input).
inline uint8_t InputBit(RotationInput in) { return uint8_t(1u << unsigned(in)); }
RotationVerdict Settle(bool rotate, uint8_t inputs);

}  // namespace equarx::core
