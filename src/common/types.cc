// equarx — names and descriptions of dtypes, algorithms, phases and codecs (algorithms as data).
#include "equarx/types.h"

namespace equarx {
namespace {

constexpr EnumInfo kAlgorithms[] = {
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
     "without one, the cost model's for EQUARX_LINK_GBIT and EQUARX_STEP_US)"},
    {int(Algorithm::kHierarchical), "hierarchical",
     "reduce-scatter inside each host (ranks_per_host; sums in f32), the `inner` algorithm across hosts "
     "on each shard, all-gather inside the host: only the inter-host step quantizes"},
};

constexpr EnumInfo kPhases[] = {
    {int(Phases::kRS), "rs", "quantized reduce-scatter, all-gather in the input dtype"},
    {int(Phases::kAG), "ag", "reduce-scatter in the input dtype, quantized all-gather"},
    {int(Phases::kRSAG), "rs+ag", "both phases quantized"},
};

constexpr EnumInfo kCodecs[] = {
    {int(Codec::kInt8), "int8", "block-wise symmetric int8 (+-127), f32 absmax scale per block"},
    {int(Codec::kInt4), "int4", "block-wise symmetric int4 (+-7, two per byte), f32 scale per block"},
    {int(Codec::kFp8E4M3), "fp8_e4m3", "block-scaled fp8 e4m3 (max 448), f32 scale per block"},
    {int(Codec::kFp8E5M2), "fp8_e5m2", "block-scaled fp8 e5m2 (max 57344), f32 scale per block"},
};

constexpr EnumInfo kRoundings[] = {
    {int(Rounding::kNearest), "nearest", "round to nearest, ties to even"},
    {int(Rounding::kStochastic), "stochastic",
     "unbiased stochastic rounding, seeded and reproducible (int8, int4)"},
};

constexpr EnumInfo kRotations[] = {
    {int(Rotation::kDefault), "default",
     "EQUARX_ROTATION if set, else the codec's measured default (quantized plans only)"},
    {int(Rotation::kNone), "none", "no rotation"},
    {int(Rotation::kHadamard), "hadamard",
     "seeded random signs and a Walsh-Hadamard transform per block before the first encode, "
     "inverted after the last decode"},
};

constexpr EnumInfo kScaleFormats[] = {
    {int(ScaleFormat::kF32), "f32", "f32 scale per block (4 bytes)"},
    {int(ScaleFormat::kBF16), "bf16",
     "scale rounded up to bf16 (2 bytes; the range of f32, 8 significant bits)"},
    {int(ScaleFormat::kTwoLevel), "two_level",
     "bf16 scale per block and a 4-bit multiplier of it per 8 elements (int8/int4; block a "
     "multiple of 16)"},
};

template <size_t N>
std::string_view NameOf(const EnumInfo (&table)[N], int id) {
  for (const EnumInfo& e : table)
    if (e.id == id) return e.name;
  return "unknown";
}

template <size_t N>
std::optional<int> IdOf(const EnumInfo (&table)[N], std::string_view name) {
  for (const EnumInfo& e : table)
    if (e.name == name) return e.id;
  return std::nullopt;
}

}  // namespace

size_t DTypeSize(DType dtype) { return dtype == DType::kFloat32 ? 4 : 2; }

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "f32";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat16: return "f16";
  }
  return "unknown";
}

std::optional<DType> ParseDType(std::string_view n) {
  if (n == "f32" || n == "float32" || n == "float") return DType::kFloat32;
  if (n == "bf16" || n == "bfloat16") return DType::kBFloat16;
  if (n == "f16" || n == "float16" || n == "fp16" || n == "half") return DType::kFloat16;
  return std::nullopt;
}

std::string_view AlgorithmName(Algorithm a) { return NameOf(kAlgorithms, int(a)); }
std::string_view PhasesName(Phases p) { return NameOf(kPhases, int(p)); }
std::string_view CodecName(Codec c) { return NameOf(kCodecs, int(c)); }
std::string_view RoundingName(Rounding r) { return NameOf(kRoundings, int(r)); }
std::string_view RotationName(Rotation r) { return NameOf(kRotations, int(r)); }
std::string_view ScaleFormatName(ScaleFormat s) { return NameOf(kScaleFormats, int(s)); }

std::optional<Algorithm> ParseAlgorithm(std::string_view name) {
  if (auto id = IdOf(kAlgorithms, name)) return Algorithm(*id);
  return std::nullopt;
}
std::optional<Phases> ParsePhases(std::string_view name) {
  if (name == "rsag" || name == "rs_ag" || name == "all") return Phases::kRSAG;
  if (auto id = IdOf(kPhases, name)) return Phases(*id);
  return std::nullopt;
}
std::optional<Codec> ParseCodec(std::string_view name) {
  if (name == "e4m3" || name == "fp8") return Codec::kFp8E4M3;
  if (name == "e5m2") return Codec::kFp8E5M2;
  if (auto id = IdOf(kCodecs, name)) return Codec(*id);
  return std::nullopt;
}
std::optional<Rounding> ParseRounding(std::string_view name) {
  if (name == "rne" || name == "nearest_even") return Rounding::kNearest;
  if (name == "sr") return Rounding::kStochastic;
  if (auto id = IdOf(kRoundings, name)) return Rounding(*id);
  return std::nullopt;
}
std::optional<ScaleFormat> ParseScaleFormat(std::string_view name) {
  if (auto id = IdOf(kScaleFormats, name)) return ScaleFormat(*id);
  return std::nullopt;
}

std::optional<Rotation> ParseRotation(std::string_view name) {
  if (name == "wht") return Rotation::kHadamard;
  if (auto id = IdOf(kRotations, name)) return Rotation(*id);
  return std::nullopt;
}

const EnumInfo* AlgorithmTable(size_t* n) { *n = std::size(kAlgorithms); return kAlgorithms; }
const EnumInfo* PhasesTable(size_t* n) { *n = std::size(kPhases); return kPhases; }
const EnumInfo* CodecTable(size_t* n) { *n = std::size(kCodecs); return kCodecs; }
const EnumInfo* RoundingTable(size_t* n) { *n = std::size(kRoundings); return kRoundings; }
const EnumInfo* RotationTable(size_t* n) { *n = std::size(kRotations); return kRotations; }
const EnumInfo* ScaleFormatTable(size_t* n) { *n = std::size(kScaleFormats); return kScaleFormats; }

// Indexed by the enum values (checked by static_asserts below).
constexpr AlgorithmTraits kAlgorithmTraits[] = {
    /* ring       */ {false, false},
    /* full       */ {true, true},
    /* full_bidir */ {true, true},
    /* semi       */ {true, true},
    /* naive_fp8  */ {true, false},
    /* two_shot   */ {true, true},
    /* auto       */ {false, true},
    /* hierarchical */ {false, true},  // quantizes where `inner` does
};
static_assert(std::size(kAlgorithmTraits) == std::size(kAlgorithms));
static_assert(int(Algorithm::kRing) == 0 && int(Algorithm::kTwoShot) == 5 && int(Algorithm::kAuto) == 6 &&
              int(Algorithm::kHierarchical) == 7);

// Default rotations measured on a real model's activations (docs/accuracy.md, section 6; docs/
// gemma3.md): the rotation cuts the integer codecs' error several times over and keeps
// Gaussian data's; it makes both fp8 grids worse (their codes already carry relative precision).
constexpr CodecTraits kCodecTraits[] = {
    /* int8     */ {8, true, Rotation::kHadamard},
    /* int4     */ {4, true, Rotation::kHadamard},
    /* fp8_e4m3 */ {8, false, Rotation::kNone},
    /* fp8_e5m2 */ {8, false, Rotation::kNone},
};
static_assert(std::size(kCodecTraits) == std::size(kCodecs));
static_assert(int(Codec::kInt8) == 0 && int(Codec::kFp8E5M2) == 3);

const AlgorithmTraits& TraitsOf(Algorithm a) {
  const size_t i = size_t(a);
  return kAlgorithmTraits[i < std::size(kAlgorithmTraits) ? i : 0];
}

const CodecTraits& TraitsOf(Codec c) {
  const size_t i = size_t(c);
  return kCodecTraits[i < std::size(kCodecTraits) ? i : 0];
}

bool SupportsStochasticRounding(Codec c) { return TraitsOf(c).integer; }

bool IsQuantized(Algorithm a) { return TraitsOf(a).quantizes; }

bool TakesCodec(Algorithm a) { return TraitsOf(a).takes_codec; }

}  // namespace equarx
