// dequant.h — dequantization of ggml tensor blocks to f32 (F32, F16, BF16, Q4_0, Q5_0, Q8_0,
// Q4_K, Q5_K, Q6_K), written from the published GGUF/ggml block layouts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gemma3 {

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);  ///< round to nearest even (for writing test files)
float BFloat16ToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);  ///< round to nearest even

/// Decodes `n` elements (a multiple of the type's block) of `type` from `src` into `dst`.
/// Returns false for an unsupported type.
bool Dequantize(uint32_t type, const uint8_t* src, size_t n, float* dst);

}  // namespace gemma3
