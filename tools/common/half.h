// equarx tools — scalar 16-bit float conversions and reference rounding.
//
// The tools need bf16/f16 conversions before (and independently of) the codec library, so
// they carry their own tiny implementation here. All conversions round to nearest even,
// f32 overflow saturates to +-Inf as IEEE requires, NaN becomes the canonical quiet NaN of
// the target type (sign kept). RoundF64To* round an exact f64 value *directly* to the
// target precision (no double rounding through f32), which is what "bf16(exact sum)" means.
#pragma once

#include <cstddef>
#include <cstdint>

namespace equarx::tools {

uint16_t F32ToBF16(float f);
float BF16ToF32(uint16_t h);
uint16_t F32ToF16(float f);
float F16ToF32(uint16_t h);

/// x rounded once (nearest even) to bf16 / f16 / f32 precision and range, returned as f64.
double RoundF64ToBF16(double x);
double RoundF64ToF16(double x);
double RoundF64ToF32(double x);

/// Array helpers (n elements).
void F32ToBF16Array(const float* src, size_t n, uint16_t* dst);
void BF16ToF32Array(const uint16_t* src, size_t n, float* dst);
void F32ToF16Array(const float* src, size_t n, uint16_t* dst);
void F16ToF32Array(const uint16_t* src, size_t n, float* dst);

}  // namespace equarx::tools
