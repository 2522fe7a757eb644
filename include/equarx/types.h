// equarx — element types, algorithms, phases and codecs, as data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace equarx {

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
};

/// Which phases of the AllReduce carry quantized data.
enum class Phases : uint8_t {
  kRS = 1,    ///< reduce-scatter quantized, all-gather in the input dtype
  kAG = 2,    ///< reduce-scatter in the input dtype, all-gather quantized
  kRSAG = 3,  ///< both quantized
};

/// Wire codec of the quantized phases: every one is dynamic, block-wise and symmetric (one
/// f32 absmax scale per block), differing in the code that carries each value.
/// Byte-exact formats in docs/wire_format.md.
enum class Codec : uint8_t {
  kInt8 = 0,     ///< int8 in [-127, 127]: 1 + 4/B bytes per value
  kInt4 = 1,     ///< int4 in [-7, 7], two per byte: 0.5 + 4/B bytes per value
  kFp8E4M3 = 2,  ///< fp8 e4m3 (max 448): 1 + 4/B bytes, relative precision for small values
  kFp8E5M2 = 3,  ///< fp8 e5m2 (max 57344): 1 + 4/B bytes, the widest range of the four
};

/// How the quantized phases round a value onto the codec's grid.
enum class Rounding : uint8_t {
  kNearest = 0,     ///< round to nearest, ties to even (deterministic, biased per value)
  kStochastic = 1,  ///< up with probability equal to the remainder: unbiased; int8/int4 only.
                    ///< Random bits from a counter-based hash of (seed, hop, element index):
                    ///< the same seed gives the same bits on every run, rank and SIMD target.
};

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

/// How each block's scale is stored on the wire (docs/wire_format.md).
enum class ScaleFormat : uint8_t {
  kF32 = 0,   ///< the f32 scale, 4 bytes per block
  kBF16 = 1,  ///< the f32 scale rounded up to bf16, 2 bytes per block (same range as f32)
  /// Two levels: the bf16 scale of the block (as kBF16) and, per sub-block of 8 elements, a
  /// 4-bit multiplier (c + 1) / 16 of it, so each 8 elements get their own step. 2 bytes per
  /// block plus half a byte per 8 elements; int8 and int4 only, block a multiple of 16.
  kTwoLevel = 2,
};

/// Metadata of one enum value: stable id, the name the tools accept, a one-line description.
struct EnumInfo {
  int id;
  std::string_view name;
  std::string_view description;
};

std::string_view AlgorithmName(Algorithm a);
std::string_view PhasesName(Phases p);  ///< "rs", "ag", "rs+ag"
std::string_view CodecName(Codec c);
std::string_view RoundingName(Rounding r);  ///< "nearest", "stochastic"
std::string_view RotationName(Rotation r);  ///< "default", "none", "hadamard"
std::string_view ScaleFormatName(ScaleFormat s);  ///< "f32", "bf16", "two_level"
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

/// What the library knows about an algorithm, as data (the functions below read it).
struct AlgorithmTraits {
  bool quantizes;     ///< sends quantized data (not the ring; auto depends on what it picks)
  bool takes_codec;   ///< uses phases, codec, block, scale, rounding and rotation
};
const AlgorithmTraits& TraitsOf(Algorithm a);

/// What the library knows about a codec, as data.
struct CodecTraits {
  unsigned code_bits;  ///< bits per value on the wire, before the block scales
  bool integer;        ///< integer codes: stochastic rounding applies
  Rotation default_rotation;  ///< what Rotation::kDefault means for it (measured)
};
const CodecTraits& TraitsOf(Codec c);

/// Whether a codec supports Rounding::kStochastic (the integer codecs).
bool SupportsStochasticRounding(Codec c);

/// Whether an algorithm quantizes at all (everything except kRing and kAuto).
bool IsQuantized(Algorithm a);

/// Whether an algorithm takes the codec options (phases, codec, block, scale, rounding,
/// rotation): every algorithm except the unquantized ring and naive_fp8 (a fixed e5m2 cast);
/// kAuto passes them to what it picks.
bool TakesCodec(Algorithm a);

}  // namespace equarx
