// equarx — the functions that read the enum tables of include/equarx/types.h (names,
// descriptions, traits).
#include "equarx/types.h"

namespace equarx {
namespace {

using namespace detail;

// The traits tables are indexed by the enum value: each name table's ids must be 0, 1, ...
template <size_t N>
constexpr bool IdsAreIndices(const EnumInfo (&table)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (table[i].id != int(i)) return false;
  return true;
}

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

static_assert(std::size(kAlgorithmTraits) == std::size(kAlgorithms) && IdsAreIndices(kAlgorithms));
static_assert(std::size(kCodecTraits) == std::size(kCodecs) && IdsAreIndices(kCodecs));

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
