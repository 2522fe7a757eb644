// equarx codec — the wire formats and their kernels. No ranks, no I/O.
//
// A kernel works on one *segment*: n consecutive elements that start on a block boundary of
// the whole tensor (the block grid is anchored to absolute element offsets, so a block's scale
// depends only on its own elements and never on how the tensor was cut). Every block of a
// segment has `block` elements except possibly the last one.
//
// Formats: kRawF32, kRawBF16 and kRawF16 (the unquantized wires), kRawE5M2 (the paper's
// naive fp8 cast, no scale), and one block format per row of block_formats.inc (kInt8Block,
// kInt4Block, kFp8E4M3Block, kFp8E5M2Block, kInt6Block, kInt5Block): [nb scales][codes],
// each scale stored as WireSpec::scale says (f32, bf16 or two-level) and each code rounded as
// WireSpec::rounding says. docs/wire_format.md is the byte-exact specification: encoding and
// decoding, non-finite values, the NaN and same-type rules, stochastic rounding's hash, and
// worked examples that tests check against the scalar reference (namespace ref).
//
// Arithmetic is fixed: f32 multiplies and adds in this order, never fused (the project builds
// with -ffp-contract=off), so the scalar reference (namespace ref) and every SIMD target give
// bitwise identical bytes and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "equarx/types.h"

#include "codec/block_formats.inc"

namespace equarx::codec {

/// The wire formats: four raw ones, then one per row of the block format table
/// (block_formats.inc: kInt8Block = 4, kInt4Block, kFp8E4M3Block, kFp8E5M2Block, kInt6Block,
/// kInt5Block = 9).
enum class Format : uint8_t {
  kRawF32 = 0,
  kRawBF16 = 1,
  kRawF16 = 2,
  kRawE5M2 = 3,
#define EQUARX_X(name, id, ...) name = id,
  EQUARX_BLOCK_FORMATS(EQUARX_X)
#undef EQUARX_X
};

/// A row of the block format table (block_formats.inc, which explains the columns).
struct BlockFormatInfo {
  Format format;
  Codec codec;
  const char* name;
  float q, q_flag, tiny, step;
  unsigned bits, mbits;
};
inline constexpr BlockFormatInfo kBlockFormats[] = {
#define EQUARX_X(name, id, codec, text, q, q_flag, tiny, step, bits, mbits, kernels) \
  {Format::name, Codec::codec, text, q, q_flag, tiny, step, bits, mbits},
    EQUARX_BLOCK_FORMATS(EQUARX_X)
#undef EQUARX_X
};
/// Whether the rows' Format values run 4, 5, 6, ... (so a row is found by its index).
constexpr bool RowsAreContiguous() {
  for (size_t i = 0; i < std::size(kBlockFormats); ++i)
    if (size_t(kBlockFormats[i].format) != size_t(Format::kRawE5M2) + 1 + i) return false;
  return true;
}
static_assert(RowsAreContiguous(), "block_formats.inc: ids must follow the raw formats, in order");
/// The row of a block format; null for the raw formats.
constexpr const BlockFormatInfo* BlockInfoOf(Format f) {
  const size_t i = size_t(f) - (size_t(Format::kRawE5M2) + 1);  // wraps for the raw formats
  return i < std::size(kBlockFormats) ? &kBlockFormats[i] : nullptr;
}
/// The row of the block format that carries a public codec (every Codec has one; tested).
constexpr const BlockFormatInfo& BlockInfoOf(Codec c) {
  for (const BlockFormatInfo& r : kBlockFormats)
    if (r.codec == c) return r;
  return kBlockFormats[0];
}

/// WireSpec::rounding values.
inline constexpr uint8_t kRoundNearestEven = 0;
inline constexpr uint8_t kRoundStochastic = 1;

/// A wire format with its block size (ignored by the raw formats) and, for the block formats,
/// how to round. The fields after `block` are optional (zero = round to nearest even).
struct WireSpec {
  Format format = Format::kInt8Block;
  uint32_t block = 64;
  /// kRoundNearestEven or kRoundStochastic (integer codes only; ignored by every other format).
  uint8_t rounding = kRoundNearestEven;
  /// Stochastic rounding: the user's seed, a per-hop stream value chosen by the algorithm, and
  /// the absolute index (in the whole tensor) of the segment's first element. The random bits
  /// of an element depend only on (seed, stream, absolute index).
  uint64_t seed = 0;
  uint64_t stream = 0;
  uint64_t offset = 0;
  /// How the block formats store each block's scale: kScaleF32 (4 bytes, the f32 value) or
  /// kScaleBF16 (2 bytes: the f32 scale rounded up to bf16; encoding then multiplies by
  /// 1 / scale) or kScaleTwoLevel (the bf16 scale plus a 4-bit multiplier per 8 elements).
  /// Each keeps the sign bit as the non-finite flag. Ignored by raw formats.
  uint8_t scale = 0;
  /// A part of a larger segment (PartOf): where this part's codes and sub-scale codes start,
  /// in bytes from the wire pointer passed to the kernel. 0 = the segment's own layout.
  uint64_t part_codes_at = 0;
  uint64_t part_subs_at = 0;
};

/// WireSpec::scale values.
inline constexpr uint8_t kScaleF32 = 0;
inline constexpr uint8_t kScaleBF16 = 1;
inline constexpr uint8_t kScaleTwoLevel = 2;

/// Opt-in error telemetry of an encode. The kernels *add* to these fields (max for the max),
/// so one zero-initialised struct can collect a whole collective.
struct EncodeStats {
  /// Finite elements with |x * inv| > Q before clamping (the f32 product). With absmax scales
  /// this only happens when f32 rounding of inv and of the product pushes a block's largest
  /// element an ulp above Q, or when stochastic rounding rounds past it; never a real clip.
  uint64_t clipped = 0;
  /// Estimated sum over elements of the squared quantization error: per block, code spacing
  /// e = step * |s| (step 1 for int, 32 for e4m3, 8192 for e5m2) and e^2/12 per element
  /// (e^2/6 stochastic); for fp8 this is an upper estimate (it assumes the top binade).
  double sum_sq_err_est = 0.0;
  /// Estimated max abs error: max over blocks of e/2 (nearest) or e (stochastic).
  float max_abs_err_est = 0.0f;
  /// Elements encoded (all of them, non-finite included).
  uint64_t values = 0;
  /// Sum of squares of the finite encoded values (the f32 value before quantization), summed
  /// per block in element order in f64: the same bits from the reference and every target.
  double sum_sq_values = 0.0;
};

/// The raw wire format that carries `dtype` unchanged.
Format RawFormatOf(DType dtype);
const char* FormatName(Format f);

/// Bytes of the wire image of a segment of n elements.
size_t WireBytes(WireSpec spec, size_t n);

// ---- Parts of a segment (kernels on several threads) -------------------------------------
// A segment of n elements can be coded as parts [begin, end) that start on multiples of
// PartGranule(spec) (whole blocks; pairs of blocks for int4 with an odd block): a kernel
// called with PartOf(...).spec on the part's elements, with its wire pointer advanced by
// wire_at, reads and writes exactly that part's bytes of the segment's wire image (its
// scales, sub-scale codes and codes, and its stochastic-rounding indices). Parts touch
// disjoint bytes, so they may run concurrently, and together they give the segment's image
// and values bit for bit. Telemetry is per part (add the parts' EncodeStats together).
struct WirePart {
  WireSpec spec;
  size_t wire_at = 0;
};
/// Elements a part's start must be a multiple of.
size_t PartGranule(const WireSpec& spec);
/// The part of a segment of n elements that starts at element `begin` (< n, a multiple of
/// PartGranule(spec)) and runs to the next part's start or n.
WirePart PartOf(const WireSpec& spec, size_t n, size_t begin);

// ---- Rotation (hadamard.cc; reference in reference_rotation.cc) --------------------------
// The randomized Walsh-Hadamard rotation of Rotation::kHadamard. The tensor is cut into
// rotation blocks of `block` elements anchored at element 0 (the codec's block grid; the last
// block may be shorter). A block of length L is split into power-of-two pieces, largest first
// (L = 2^k1 + 2^k2 + ..., k1 > k2 > ...; L = block when block is a power of two: one piece).
// For element j of block b the sign is bit (j mod 64) of SignWord(seed, b, j / 64). Forward,
// per piece of P = 2^k elements: y = 2^-floor(k/2) * H_P (d .* x); inverse:
// x = d .* (2^-ceil(k/2) * H_P y), where H_P is the unnormalized Walsh-Hadamard matrix
// applied by the in-place butterfly for h = 1, 2, 4, ..., P/2: (a, b) -> (a + b, a - b) on
// elements (i, i + h) of every 2h-group. H_P H_P = P I, so inverse(forward(x)) = x up to f32
// rounding; the power-of-two factors are exact and make the transform orthogonal up to a
// factor of 1 or sqrt(2) (which block scaling ignores). A sign flip is an XOR of the sign bit.
// Fixed operation order: the reference and every SIMD target give bitwise equal results.
// Guarded rotation (`guard`): for a call that rotates without first checking its inputs
// (SafeToRotate). The forward transform outputs every block whose input holds a value
// SafeToRotate refuses (NaN, Inf, |x| >= 2^100) as canonical NaNs, so that the sums of that
// block are NaN on every rank; the inverse reports whether any of its f32 results (before the
// conversion to the destination type) is NaN or Inf. Without `guard` neither happens.
struct RotationSpec {
  uint32_t block = 0;  ///< rotation block (0: no rotation)
  uint64_t seed = 0;
  bool guard = false;
};
/// The 64 sign bits of elements 64c .. 64c+63 of rotation block b.
uint64_t RotationSignWord(uint64_t seed, uint64_t b, uint32_t c);

// ---- Kernels (runtime-dispatched to the best SIMD target; signatures in kernels.inc) -------
#include "codec/kernels.inc"  // IWYU pragma: export

// ---- Scalar reference: the executable specification; same signatures. ------------------
namespace ref {
#include "codec/kernels.inc"  // IWYU pragma: export

// Scalar conversions used by everything else (tools, tests).
float BF16ToF32(uint16_t h);
uint16_t F32ToBF16(float f);
float F16ToF32(uint16_t h);
uint16_t F32ToF16(float f);
float E5M2ToF32(uint8_t b);
uint8_t F32ToE5M2(float f);
/// fp8 e4m3 "fn" (1-4-3, bias 7, no Inf; 0x7F/0xFF are NaN, widened like the others).
float E4M3ToF32(uint8_t b);
/// f32 -> e4m3 "fn": round to nearest even, finite overflow saturates to ±448 (0x7E/0xFE),
/// ±Inf saturate too (e4m3 has no Inf), NaN -> 0x7F.
uint8_t F32ToE4M3(float f);
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
