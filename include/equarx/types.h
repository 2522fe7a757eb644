// equarx — element types, algorithms, phases and codecs, as data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace equarx {

/// Metadata of one enum value: stable id, the name the tools accept, a one-line description.
struct EnumInfo {
  int id;
  std::string_view name;
  std::string_view description;
};

// Each enum below is followed by its table (names the tools accept, one-line descriptions,
// traits) in namespace detail: a new value is its enumerator and its rows, in this file.
// types.cc holds only the functions that read the tables.

/// Element type of the caller's buffers. Accumulation is always f32.
enum class DType : uint8_t {
  kFloat32 = 0,
  kBFloat16 = 1,
  kFloat16 = 2,
};

/// Bytes per element of a dtype.
size_t DTypeSize(DType dtype);
std::string_view DTypeName(DType dtype);  ///< "f32", "bf16", "f16"
std::optional<DType> ParseDType(std::string_view name);  ///< accepts f32/float32, bf16/bfloat16, f16/float16/fp16

/// The AllReduce algorithm (ring shape). See docs/algorithms.md.
enum class Algorithm : uint8_t {
  kRing = 0,       ///< unquantized ring baseline: input dtype on the wire, f32 accumulation
  kFull = 1,       ///< EQuARX full loop: one unidirectional ring
  kFullBidir = 2,  ///< EQuARX full loop, half the data in each ring direction
  kSemi = 3,       ///< EQuARX semi-loop: two chains meet at each owner
  kNaiveFp8 = 4,   ///< fp8 e5m2 cast with no scales, summed in fp8 (error reference only)
  kTwoShot = 5,    ///< all-to-all RS + AG: exactly two quantizations whatever N
  kAuto = 6,       ///< by message size from a crossover table, measured or the cost model's (switches numerics!)
  kHierarchical = 7,  ///< reduce-scatter inside each host (f32 sums), `inner` across hosts, all-gather
  kOneShot = 8,     ///< every rank sends its whole contribution, quantized once, to every peer;
                    ///< every rank sums all N in rank order: one step, for small messages
  kOneShotRaw = 9,  ///< one_shot unquantized: the input dtype on the wire, f32 sums in rank order
  kRecursiveDoubling = 10,  ///< unquantized f32 partial sums traded with rank ^ 2^k, log2 N steps
};

/// What the library knows about an algorithm, as data (the functions below read it).
struct AlgorithmTraits {
  bool quantizes;     ///< sends quantized data (not the ring; auto depends on what it picks)
  bool takes_codec;   ///< uses phases, codec, block, scale, rounding and rotation
};
namespace detail {
inline constexpr EnumInfo kAlgorithms[] = {
    {int(Algorithm::kRing), "ring",
     "unquantized ring: reduce-scatter + all-gather, input dtype on the wire, f32 sums"},
    {int(Algorithm::kFull), "full",
     "EQuARX full loop: one unidirectional ring, requantized in f32 at every hop"},
    {int(Algorithm::kFullBidir), "full_bidir",
     "EQuARX full loop with half the data on each ring direction (uses both link directions)"},
    {int(Algorithm::kSemi), "semi",
     "EQuARX semi-loop: two chains of ~N/2 hops meet at each owner (fewer requantizations)"},
    {int(Algorithm::kNaiveFp8), "naive_fp8",
     "fp8 e5m2 cast without scales, summed in fp8 along the ring (error reference only)"},
    {int(Algorithm::kTwoShot), "two_shot",
     "all-to-all reduce-scatter + all-gather: each value quantized once, two quantizations total"},
    {int(Algorithm::kAuto), "auto",
     "by message size from a crossover table (EQUARX_TUNE_FILE, written by equarx-tune; "
     "without one, the cost model's for EQUARX_LINK_GBIT, EQUARX_STEP_US and EQUARX_MESSAGE_US)"},
    {int(Algorithm::kHierarchical), "hierarchical",
     "reduce-scatter inside each host (ranks_per_host; sums in f32), the `inner` algorithm across hosts "
     "on each shard, all-gather inside the host: only the inter-host step quantizes"},
    {int(Algorithm::kOneShot), "one_shot",
     "every rank sends its whole contribution, quantized once, to every peer and sums all of "
     "them in rank order: one step (small messages)"},
    {int(Algorithm::kOneShotRaw), "one_shot_raw",
     "one_shot unquantized: the input dtype on the wire, f32 sums in rank order (small messages)"},
    {int(Algorithm::kRecursiveDoubling), "recursive_doubling",
     "unquantized: in step k every rank trades its f32 partial sum with rank ^ 2^k and both add "
     "them; log2 N steps of one message each (small messages)"},
};
// Indexed by the enum values (checked by static_asserts in types.cc).
inline constexpr AlgorithmTraits kAlgorithmTraits[] = {
    /* ring       */ {false, false},
    /* full       */ {true, true},
    /* full_bidir */ {true, true},
    /* semi       */ {true, true},
    /* naive_fp8  */ {true, false},
    /* two_shot   */ {true, true},
    /* auto       */ {false, true},
    /* hierarchical */ {false, true},  // quantizes where `inner` does
    /* one_shot   */ {true, true},
    /* one_shot_raw */ {false, false},
    /* recursive_doubling */ {false, false},
};
}  // namespace detail

/// Which phases of the AllReduce carry quantized data.
enum class Phases : uint8_t {
  kRS = 1,    ///< reduce-scatter quantized, all-gather in the input dtype
  kAG = 2,    ///< reduce-scatter in the input dtype, all-gather quantized
  kRSAG = 3,  ///< both quantized
};

namespace detail {
inline constexpr EnumInfo kPhases[] = {
    {int(Phases::kRS), "rs", "quantized reduce-scatter, all-gather in the input dtype"},
    {int(Phases::kAG), "ag", "reduce-scatter in the input dtype, quantized all-gather"},
    {int(Phases::kRSAG), "rs+ag", "both phases quantized"},
};
}  // namespace detail

/// How the quantized phases round a value onto the codec's grid.
enum class Rounding : uint8_t {
  kNearest = 0,     ///< round to nearest, ties to even (deterministic, biased per value)
  kStochastic = 1,  ///< up with probability equal to the remainder: unbiased; integer codecs only.
                    ///< Random bits from a counter-based hash of (seed, hop, element index):
                    ///< the same seed gives the same bits on every run, rank and SIMD target.
};

namespace detail {
inline constexpr EnumInfo kRoundings[] = {
    {int(Rounding::kNearest), "nearest", "round to nearest, ties to even"},
    {int(Rounding::kStochastic), "stochastic",
     "unbiased stochastic rounding, seeded and reproducible (integer codecs)"},
};
}  // namespace detail

/// A rotation applied to every rank's contribution before the first encode and undone after
/// the last decode (docs/algorithms.md, "Rotation"). Linear and orthogonal, so it commutes with
/// the sum; it spreads an outlier's energy over its block so that the block's scale follows
/// the block's RMS instead of its maximum. No extra wire bytes.
enum class Rotation : uint8_t {
  kDefault = 0,   ///< EQUARX_ROTATION if set, else the measured default of the codec
                  ///< (see DefaultRotation); never applied to unquantized plans
  kNone = 1,      ///< no rotation
  kHadamard = 2,  ///< per rotation block: seeded random signs, then a Walsh-Hadamard transform
};

namespace detail {
inline constexpr EnumInfo kRotations[] = {
    {int(Rotation::kDefault), "default",
     "EQUARX_ROTATION if set, else the codec's measured default (quantized plans only)"},
    {int(Rotation::kNone), "none", "no rotation"},
    {int(Rotation::kHadamard), "hadamard",
     "seeded random signs and a Walsh-Hadamard transform per block before the first encode, "
     "inverted after the last decode"},
};
}  // namespace detail

/// How each block's scale is stored on the wire (docs/wire_format.md).
enum class ScaleFormat : uint8_t {
  kF32 = 0,   ///< the f32 scale, 4 bytes per block
  kBF16 = 1,  ///< the f32 scale rounded up to bf16, 2 bytes per block (same range as f32)
  /// Two levels: the bf16 scale of the block (as kBF16) and, per sub-block of 8 elements, a
  /// 4-bit multiplier (c + 1) / 16 of it, so each 8 elements get their own step. 2 bytes per
  /// block plus half a byte per 8 elements; integer codecs only, block a multiple of 16.
  kTwoLevel = 2,
  /// The codec's measured default (DefaultScale in options.h): two_level for the integer
  /// codecs, f32 for fp8. A block left unset follows the scale it resolves to (DefaultBlock).
  kDefault = 3,
};

namespace detail {
inline constexpr EnumInfo kScaleFormats[] = {
    {int(ScaleFormat::kDefault), "default",
     "the codec's measured default: two_level for integer codecs (block 128), f32 for fp8 (block 64)"},
    {int(ScaleFormat::kF32), "f32", "f32 scale per block (4 bytes)"},
    {int(ScaleFormat::kBF16), "bf16",
     "scale rounded up to bf16 (2 bytes; the range of f32, 8 significant bits)"},
    {int(ScaleFormat::kTwoLevel), "two_level",
     "bf16 scale per block and a 4-bit multiplier of it per 8 elements (integer codecs; block a "
     "multiple of 16)"},
};
}  // namespace detail

/// Wire codec of the quantized phases: every one is dynamic, block-wise and symmetric (one
/// absmax scale per block, stored as `scale` says), differing in the code that carries each
/// value. Bytes per value are the code's plus the scale's share: 4/B with f32 scales, 2/B
/// with bf16 ones, 2/B + 1/16 with two-level ones (B = block).
/// Byte-exact formats in docs/wire_format.md.
enum class Codec : uint8_t {
  kInt8 = 0,     ///< int8 in [-127, 127]: 1 byte per value + the scale's share
  kInt4 = 1,     ///< int4 in [-7, 7], two per byte: 0.5 byte per value + the scale's share
  kFp8E4M3 = 2,  ///< fp8 e4m3 (max 448): 1 byte + the scale's share; relative precision
  kFp8E5M2 = 3,  ///< fp8 e5m2 (max 57344): 1 byte + the scale's share; the widest range
  kInt6 = 4,     ///< int6 in [-31, 31], four in 3 bytes: 0.75 byte per value + the scale's share
  kInt5 = 5,     ///< int5 in [-15, 15], eight in 5 bytes: 0.625 byte per value + the scale's share
};

/// What the library knows about a codec, as data.
struct CodecTraits {
  unsigned code_bits;  ///< bits per value on the wire, before the block scales
  bool integer;        ///< integer codes: stochastic rounding applies
  Rotation default_rotation;  ///< what Rotation::kDefault means for it (measured)
  ScaleFormat default_scale;  ///< what ScaleFormat::kDefault means for it (measured)
};
namespace detail {
inline constexpr EnumInfo kCodecs[] = {
    {int(Codec::kInt8), "int8", "block-wise symmetric int8 (+-127), f32 absmax scale per block"},
    {int(Codec::kInt4), "int4", "block-wise symmetric int4 (+-7, two per byte), f32 scale per block"},
    {int(Codec::kFp8E4M3), "fp8_e4m3", "block-scaled fp8 e4m3 (max 448), f32 scale per block"},
    {int(Codec::kFp8E5M2), "fp8_e5m2", "block-scaled fp8 e5m2 (max 57344), f32 scale per block"},
    {int(Codec::kInt6), "int6", "block-wise symmetric int6 (+-31, four in 3 bytes), f32 scale per block"},
    {int(Codec::kInt5), "int5", "block-wise symmetric int5 (+-15, eight in 5 bytes), f32 scale per block"},
};
// Indexed by the enum values. Default rotations measured on a real model's activations
// (docs/accuracy.md, section 6; docs/gemma3.md): the rotation cuts the integer codecs' error
// several times over and keeps Gaussian data's; it makes both fp8 grids worse (their codes
// already carry relative precision). Default scales: two-level scales are the lowest-KL point
// at int8's byte budget whose speed costs at most 3% (docs/performance.md, "The default
// point"); fp8 has no two-level scales. The codec's wire format is its row of the library's
// block format table (src/codec/block_formats.inc), which a test holds to these traits.
inline constexpr CodecTraits kCodecTraits[] = {
    /* int8     */ {8, true, Rotation::kHadamard, ScaleFormat::kTwoLevel},
    /* int4     */ {4, true, Rotation::kHadamard, ScaleFormat::kTwoLevel},
    /* fp8_e4m3 */ {8, false, Rotation::kNone, ScaleFormat::kF32},
    /* fp8_e5m2 */ {8, false, Rotation::kNone, ScaleFormat::kF32},
    /* int6     */ {6, true, Rotation::kHadamard, ScaleFormat::kTwoLevel},
    /* int5     */ {5, true, Rotation::kHadamard, ScaleFormat::kTwoLevel},
};
}  // namespace detail

std::string_view AlgorithmName(Algorithm a);
std::string_view PhasesName(Phases p);  ///< "rs", "ag", "rs+ag"
std::string_view CodecName(Codec c);
std::string_view RoundingName(Rounding r);  ///< "nearest", "stochastic"
std::string_view RotationName(Rotation r);  ///< "default", "none", "hadamard"
std::string_view ScaleFormatName(ScaleFormat s);  ///< "f32", "bf16", "two_level", "default"
std::optional<Algorithm> ParseAlgorithm(std::string_view name);
std::optional<Phases> ParsePhases(std::string_view name);
std::optional<Codec> ParseCodec(std::string_view name);
std::optional<Rounding> ParseRounding(std::string_view name);
std::optional<Rotation> ParseRotation(std::string_view name);
std::optional<ScaleFormat> ParseScaleFormat(std::string_view name);

/// Every algorithm / phases / codec / rounding value with its description, for --help and
/// equarx-info.
const EnumInfo* AlgorithmTable(size_t* n);
const EnumInfo* PhasesTable(size_t* n);
const EnumInfo* CodecTable(size_t* n);
const EnumInfo* RoundingTable(size_t* n);
const EnumInfo* RotationTable(size_t* n);
const EnumInfo* ScaleFormatTable(size_t* n);

const AlgorithmTraits& TraitsOf(Algorithm a);  ///< its row of detail::kAlgorithmTraits

const CodecTraits& TraitsOf(Codec c);  ///< its row of detail::kCodecTraits

/// Whether a codec supports Rounding::kStochastic (the integer codecs).
bool SupportsStochasticRounding(Codec c);

/// Whether an algorithm quantizes at all: its traits row (not the ring, one_shot_raw, auto or
/// hierarchical, which quantize where what they resolve to does).
bool IsQuantized(Algorithm a);

/// Whether an algorithm takes the codec options (phases, codec, block, scale, rounding,
/// rotation): every algorithm except the unquantized ring and naive_fp8 (a fixed e5m2 cast);
/// kAuto passes them to what it picks.
bool TakesCodec(Algorithm a);

}  // namespace equarx
