// equarx rotation guard (see rotation_guard.h).
#include "core/rotation_guard.h"

#include "algo/resolve.h"
#include "codec/codec.h"
#include "core/validate.h"

namespace equarx::core {

RotationInput CheckInput(DType dtype, const void* x, const float* residual, size_t count) {
  const bool safe = codec::SafeToRotate(dtype, x, count) &&
                    (!residual || codec::SafeToRotate(DType::kFloat32, residual, count));
  return safe ? RotationInput::kSafe : RotationInput::kUnsafe;
}

RotationInput Announce(algo::RotationGuard guard, DType dtype, const void* send, const float* residual,
                       size_t count) {
  switch (guard) {
    case algo::RotationGuard::kNone: return RotationInput::kSafe;
    case algo::RotationGuard::kGuarded: return RotationInput::kUnscanned;
    case algo::RotationGuard::kCheckFirst: break;
  }
  return CheckInput(dtype, send, residual, count);
}

RotationVerdict Settle(bool rotate, uint8_t inputs) {
  auto seen = [&](RotationInput in) { return (inputs & InputBit(in)) != 0; };
  const bool unsafe = seen(RotationInput::kUnsafe), unscanned = seen(RotationInput::kUnscanned);
  const bool all_unscanned = inputs == InputBit(RotationInput::kUnscanned);
  RotationVerdict v;
  v.again = rotate && !unsafe && unscanned && !all_unscanned;
  v.rotate = rotate && !unsafe;
  v.guard = v.rotate && all_unscanned;
  return v;
}

RotationVerdict Settle(bool rotate, const Descriptor* all, size_t ranks) {
  uint8_t inputs = 0;
  for (size_t q = 0; q < ranks; ++q) inputs |= InputBit(all[q].rotation_input);
  return Settle(rotate, inputs);
}

}  // namespace equarx::core
