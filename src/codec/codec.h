// equarx codec — the wire formats and their kernels. No ranks, no I/O.
//
// A kernel works on one *segment*: n consecutive elements that start on a block boundary of
// the whole tensor (the block grid is anchored to absolute element offsets, so a block's scale
// depends only on its own elements and never on how the tensor was cut). Every block of a
// segment has `block` elements except possibly the last one.
//
// Formats (byte-exact specification in docs/wire_format.md):
//   kRawF32, kRawBF16, kRawF16 — the value in that type, little-endian; encoding rounds
//       f32 to nearest even (NaN becomes the canonical quiet NaN of the type). Unquantized
//       baseline wires.
//   kRawE5M2 — fp8 e5m2 (1 sign, 5 exponent, 2 mantissa bits) cast with no scale, round to
//       nearest even, finite overflow saturates to ±57344, ±Inf kept, NaN -> 0x7F. The naive fp8
//       reference of the paper only.
//   kInt8Block — dynamic block-wise symmetric int8: [nb f32 scales][n int8 codes], nb =
//       ceil(n / block). Per block: a = max |x| over its finite x; Q = 127, or 126 if the
//       block holds a non-finite value; if a < 2^-120 then s = inv = 0, else s = a / Q and
//       inv = Q / a (f32). Finite x -> clamp(roundeven(x * inv), -Q, Q); +Inf -> 127,
//       -Inf -> -127, NaN -> -128. The stored scale is s, with its sign bit set when the block
//       holds a non-finite value. Decode: q * s (f32), or in a flagged block 127/-127/-128 ->
//       +Inf/-Inf/NaN.
//
// Arithmetic is fixed: f32 multiplies and adds in this order, never fused (the project builds
// with -ffp-contract=off), so the scalar reference (namespace ref) and every SIMD target give
// bitwise identical bytes and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "equarx/types.h"

namespace equarx::codec {

enum class Format : uint8_t {
  kRawF32 = 0,
  kRawBF16 = 1,
  kRawF16 = 2,
  kRawE5M2 = 3,
  kInt8Block = 4,
};

/// A wire format with its block size (ignored by the raw formats).
struct WireSpec {
  Format format = Format::kInt8Block;
  uint32_t block = 64;
};

/// The raw wire format that carries `dtype` unchanged.
Format RawFormatOf(DType dtype);
const char* FormatName(Format f);

/// Bytes of the wire image of a segment of n elements.
size_t WireBytes(WireSpec spec, size_t n);

// ---- Kernels (runtime-dispatched to the best SIMD target) ------------------------------
// `src`/`local` are arrays of `*_type`; `acc`/`out_f32` are f32 arrays. Wire buffers need no
// alignment. Pointers of different arguments must not overlap unless stated.

/// wire <- encode(src)
void Encode(WireSpec spec, DType src_type, const void* src, size_t n, uint8_t* wire);

/// dst <- convert_to_dst_type(decode(wire))   (f32 -> bf16/f16 rounds to nearest even)
void Decode(WireSpec spec, const uint8_t* wire, size_t n, DType dst_type, void* dst);

/// out_f32[i] <- f32(local[i]) + decode(wire)[i]. `out_f32` may equal `local` when
/// local_type is f32.
void DecodeAccumulate(WireSpec spec, const uint8_t* wire, size_t n, DType local_type,
                      const void* local, float* out_f32);

/// wire_out <- encode(f32(local[i]) + decode(wire_in)[i]), with the f32 sums never stored.
void DecodeAccumulateEncode(WireSpec spec, const uint8_t* wire_in, size_t n, DType local_type,
                            const void* local, uint8_t* wire_out);

/// dst <- src converted between dtypes (round to nearest even, canonical NaN).
void Convert(DType src_type, const void* src, size_t n, DType dst_type, void* dst);

// ---- Scalar reference: the executable specification; same signatures. ------------------
namespace ref {
void Encode(WireSpec spec, DType src_type, const void* src, size_t n, uint8_t* wire);
void Decode(WireSpec spec, const uint8_t* wire, size_t n, DType dst_type, void* dst);
void DecodeAccumulate(WireSpec spec, const uint8_t* wire, size_t n, DType local_type,
                      const void* local, float* out_f32);
void DecodeAccumulateEncode(WireSpec spec, const uint8_t* wire_in, size_t n, DType local_type,
                            const void* local, uint8_t* wire_out);
void Convert(DType src_type, const void* src, size_t n, DType dst_type, void* dst);

// Scalar conversions used by everything else (tools, tests).
float BF16ToF32(uint16_t h);
uint16_t F32ToBF16(float f);
float F16ToF32(uint16_t h);
uint16_t F32ToF16(float f);
float E5M2ToF32(uint8_t b);
uint8_t F32ToE5M2(float f);
}  // namespace ref

// ---- SIMD targets -----------------------------------------------------------------------
/// The SIMD targets this CPU supports and this build compiled, best first (Highway ids).
std::vector<int64_t> AvailableTargets();
std::string TargetName(int64_t target);
/// The target the dispatched kernels use now.
int64_t CurrentTarget();
/// Restricts dispatch to `target` (for tests and benchmarks); 0 restores the best target.
void ForceTarget(int64_t target);

}  // namespace equarx::codec
