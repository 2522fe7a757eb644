// equarx options as data: the one table of AllReduceOptions fields (include/equarx/options.h).
//
// Each row names a field, its kind (enum / unsigned / bool), its allowed values or range,
// whether every rank must agree on it, the environment variable that supplies it when left at
// 0 / default, a one-line doc and a getter/setter through uint64_t. Everything that lists
// options walks this table instead of naming fields: CheckOptions, the descriptor exchange and
// its diff (core/validate.cc), the C API (core/c_api.cc), ParseOptions / FormatOptions, the
// tools' flags (tools/common/option_flags.cc) and the Python keywords (python/equarx/csrc).
//
// A row with a variable names its knob (the table of common/env.h) and states neither range
// nor default: the knob's maximum is the option's (0 = unset), its doc ends with what an unset
// option becomes, from the knob's default, and algo::ResolveDefaults fills the option from the
// knob.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <type_traits>

#include "equarx/options.h"
#include "common/env.h"
#include "core/validate.h"

namespace equarx {
namespace {

// What stochastic rounding and two-level scales need (CodecTraits::integer).
constexpr const char* kIntegerCodecs = "an integer codec (int8, int6, int5, int4)";

constexpr EnumInfo kModes[] = {
    {int(ExecutionMode::kNormal), "normal", "the AllReduce"},
    {int(ExecutionMode::kWireOnly), "wire_only", "every message of the schedule, no codec work"},
    {int(ExecutionMode::kCodecOnly), "codec_only", "every codec kernel, no messages"},
};

const EnumInfo* ModeTable(size_t* n) {
  *n = std::size(kModes);
  return kModes;
}
const EnumInfo* Values(const EnumInfo* (*table)(size_t*)) {
  size_t n = 0;
  return table(&n);
}
size_t NumValues(const EnumInfo* (*table)(size_t*)) {
  size_t n = 0;
  table(&n);
  return n;
}

template <typename T>
constexpr uint64_t U(T v) {
  if constexpr (std::is_enum_v<T>) return uint64_t(std::underlying_type_t<T>(v));
  else return uint64_t(v);
}

const env::Knob& KnobNamed(std::string_view name) {
  const env::Knob* k = env::FindKnob(name);
  if (!k) {  // env::knob:: names every row, so only a broken table gets here
    std::fprintf(stderr, "equarx: option table names unknown knob %.*s\n", int(name.size()), name.data());
    std::abort();
  }
  return *k;
}

// The doc of a row fed by a knob: "doc (0 = EQUARX_X or its default)", the default as the knob
// table shows it (without its parentheses). Kept for the program's life, as the table is.
std::string_view KnobDoc(std::string_view doc, const char* unset, std::string_view knob) {
  static std::deque<std::string> docs;  // filled once, inside TheTable()'s initialization
  std::string d = KnobNamed(knob).default_value;
  if (d.size() > 1 && d.front() == '(' && d.back() == ')') d = d.substr(1, d.size() - 2);
  docs.push_back(std::string(doc) + " (" + unset + " = " + std::string(knob) + " or " + d + ")");
  return docs.back();
}

// One row. `values` is a table function for enums; a *_KNOB_ROW names its knob as
// env::knob::<field> (common/env.h): an unsigned option then ranges from 0 (unset) to the
// knob's maximum. A bool's setter is bool(v): v != 0.
#define EQUARX_ROW(field, alias, Type, kind, values, num_values, lo, hi, agreed, knob, doc)    \
  OptionField {                                                                                \
    #field, alias, kind, values, num_values, lo, hi, agreed, knob, doc,                        \
        [](const AllReduceOptions& o) { return U(o.field); },                                  \
        [](AllReduceOptions* o, uint64_t v) { o->field = Type(v); }                             \
  }
#define EQUARX_ENUM_ROW(field, alias, Type, table, agreed, doc) \
  EQUARX_ROW(field, alias, Type, OptionKind::kEnum, Values(table), NumValues(table), 0, 0, agreed, "", doc)
#define EQUARX_ENUM_KNOB_ROW(field, Type, table, agreed, knob, doc)                                       \
  EQUARX_ROW(field, "", Type, OptionKind::kEnum, Values(table), NumValues(table), 0, 0, agreed, knob, \
             KnobDoc(doc, "default", knob))
#define EQUARX_UINT_ROW(field, alias, Type, lo, hi, agreed, doc) \
  EQUARX_ROW(field, alias, Type, OptionKind::kUint, nullptr, 0, lo, hi, agreed, "", doc)
#define EQUARX_UINT_KNOB_ROW(field, Type, agreed, knob, doc)                                            \
  EQUARX_ROW(field, "", Type, OptionKind::kUint, nullptr, 0, 0, uint64_t(KnobNamed(knob).hi), agreed, \
             knob, KnobDoc(doc, "0", knob))
#define EQUARX_BOOL_ROW(field, alias, agreed, doc) \
  EQUARX_ROW(field, alias, bool, OptionKind::kBool, nullptr, 0, 0, 1, agreed, "", doc)

struct Table {
  OptionField rows[17];
  size_t n = 0;
};
// Every row travels in the cross-rank descriptor (core/validate.h).
static_assert(std::extent_v<decltype(Table::rows)> <= core::kMaxDescribedFields,
              "the option table outgrew the descriptor: raise kMaxDescribedFields and its version");

const Table& TheTable() {
  static const Table t = [] {
    Table t{{
        EQUARX_ENUM_ROW(algorithm, "algo", Algorithm, AlgorithmTable, true,
                        "AllReduce algorithm (auto: by message size; docs/algorithms.md)"),
        EQUARX_ENUM_ROW(phases, "", Phases, PhasesTable, true,
                        "which phases carry quantized data: rs, ag or rs+ag"),
        EQUARX_ENUM_ROW(codec, "", Codec, CodecTable, true, "wire codec of the quantized phases"),
        EQUARX_UINT_ROW(block, "", size_t, kMinBlock, kMaxBlock, true,
                        "elements per scale block (and per rotation block; 16 with two_level); 0 = 128 with two_level scales, else 64"),
        EQUARX_ENUM_ROW(scale, "", ScaleFormat, ScaleFormatTable, true,
                        "how each block's scale is stored: f32 (4 bytes), bf16 (2 bytes), two_level (bf16 + 4 bits per 8 elements) or default (two_level for integer codecs, f32 for fp8)"),
        EQUARX_ENUM_ROW(rounding, "", Rounding, RoundingTable, true,
                        "rounding of the quantized phases: nearest or stochastic (integer codecs)"),
        EQUARX_UINT_ROW(seed, "", uint64_t, 0, UINT64_MAX, true,
                        "seed of stochastic rounding and of the rotation's signs"),
        EQUARX_ENUM_KNOB_ROW(rotation, Rotation, RotationTable, true, env::knob::rotation,
                             "rotation before quantizing: default, none or hadamard"),
        EQUARX_UINT_KNOB_ROW(microshards, size_t, true, env::knob::microshards, "pipeline pieces per shard"),
        EQUARX_UINT_ROW(quantize_min_bytes, "", size_t, 0, UINT64_MAX, true,
                        "messages smaller than this run unquantized: the ring, one_shot_raw for one_shot (0 = never)"),
        EQUARX_BOOL_ROW(f32_partials, "", true, "unquantized reduce-scatter hops carry f32"),
        EQUARX_UINT_KNOB_ROW(timeout_ms, uint32_t, false, env::knob::timeout_ms, "per-call deadline in ms"),
        EQUARX_BOOL_ROW(validate, "", false,
                        "exchange a descriptor first so bad or mismatched calls fail everywhere"),
        EQUARX_ENUM_ROW(mode, "", ExecutionMode, ModeTable, true,
                        "diagnostics: normal, wire_only or codec_only"),
        EQUARX_ENUM_ROW(inner, "", Algorithm, AlgorithmTable, true,
                        "hierarchical: the algorithm across hosts (auto: by shard size)"),
        EQUARX_UINT_KNOB_ROW(ranks_per_host, uint32_t, true, env::knob::ranks_per_host,
                             "ranks per host in rank order"),
        EQUARX_UINT_KNOB_ROW(threads, uint32_t, false, env::knob::threads, "codec threads of this rank"),
    }};
    t.n = std::size(t.rows);
    return t;
  }();
  return t;
}

bool SameKey(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}

std::string Names(const OptionField& f) {
  std::string s;
  for (size_t i = 0; i < f.num_values; ++i) s += (i ? ", " : "") + std::string(f.values[i].name);
  return s;
}

// Enum names the library also accepts (aliases kept by the Parse* functions of types.h).
std::optional<uint64_t> ParseEnum(const OptionField& f, std::string_view v) {
  if (f.name == "algorithm") { if (auto a = ParseAlgorithm(v)) return U(*a); }
  else if (f.name == "phases") { if (auto p = ParsePhases(v)) return U(*p); }
  else if (f.name == "codec") { if (auto c = ParseCodec(v)) return U(*c); }
  else if (f.name == "rounding") { if (auto r = ParseRounding(v)) return U(*r); }
  else if (f.name == "rotation") { if (auto r = ParseRotation(v)) return U(*r); }
  else if (f.name == "scale") { if (auto r = ParseScaleFormat(v)) return U(*r); }
  for (size_t i = 0; i < f.num_values; ++i)
    if (f.values[i].name == v) return uint64_t(f.values[i].id);
  return std::nullopt;
}

std::optional<uint64_t> ParseInteger(std::string_view v) {
  if (v.empty()) return std::nullopt;
  uint64_t mult = 1;
  const char last = v.back();
  if (last == 'K' || last == 'k') mult = 1ull << 10;
  else if (last == 'M' || last == 'm') mult = 1ull << 20;
  else if (last == 'G' || last == 'g') mult = 1ull << 30;
  if (mult != 1) v.remove_suffix(1);
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty()) return std::nullopt;
  if (x > UINT64_MAX / mult) return std::nullopt;
  return x * mult;
}

// Whether v is in f's range. An unsigned option whose default is 0 takes 0 as "unset" (the
// call resolves it: algo::ResolveDefaults) even where its range starts above 0 (block).
bool InRange(const OptionField& f, uint64_t v) {
  static const AllReduceOptions kUnset;  // CheckOptions runs on every call: built once
  return (v == 0 && f.get(kUnset) == 0) || (v >= f.min && v <= f.max);
}

}  // namespace

Rotation DefaultRotation(Codec codec) { return TraitsOf(codec).default_rotation; }
ScaleFormat DefaultScale(Codec codec, size_t block) {
  const ScaleFormat s = TraitsOf(codec).default_scale;
  return s == ScaleFormat::kTwoLevel && block % 16 != 0 ? ScaleFormat::kF32 : s;
}
size_t DefaultBlock(ScaleFormat scale) {
  return scale == ScaleFormat::kTwoLevel ? kDefaultTwoLevelBlock : kDefaultBlock;
}

const OptionField* OptionFields(size_t* n) {
  const Table& t = TheTable();
  *n = t.n;
  return t.rows;
}

const OptionField* FindOptionField(std::string_view name) {
  const Table& t = TheTable();
  for (size_t i = 0; i < t.n; ++i)
    if (SameKey(t.rows[i].name, name) || SameKey(t.rows[i].alias, name)) return &t.rows[i];
  return nullptr;
}

std::string FormatOptionValue(const OptionField& f, uint64_t value) {
  if (f.kind == OptionKind::kEnum) {
    for (size_t i = 0; i < f.num_values; ++i)
      if (uint64_t(f.values[i].id) == value) return std::string(f.values[i].name);
    return "unknown(" + std::to_string(value) + ")";
  }
  return std::to_string(value);
}

Status ParseOptionValue(const OptionField& f, std::string_view v, uint64_t* out) {
  const std::string key(f.name);
  if (f.kind == OptionKind::kEnum) {
    auto id = ParseEnum(f, v);
    if (!id)
      return InvalidArgument("unknown " + key + " '" + std::string(v) + "' (valid: " + Names(f) + ")");
    *out = *id;
    return Status::Ok();
  }
  if (f.kind == OptionKind::kBool) {
    if (v == "1" || v == "true" || v == "True" || v == "on" || v == "yes") *out = 1;
    else if (v == "0" || v == "false" || v == "False" || v == "off" || v == "no") *out = 0;
    else return InvalidArgument("option " + key + "='" + std::string(v) + "' is not a bool (0/1, true/false)");
    return Status::Ok();
  }
  auto x = ParseInteger(v);
  if (!x)
    return InvalidArgument("option " + key + "='" + std::string(v) + "' is not a non-negative integer");
  if (!InRange(f, *x))
    return InvalidArgument(key + " " + std::to_string(*x) + " is out of range [" +
                           std::to_string(f.min) + ", " + std::to_string(f.max) + "]");
  *out = *x;
  return Status::Ok();
}

Status ParseOptions(std::string_view text, AllReduceOptions* options) {
  AllReduceOptions o = *options;
  auto is_sep = [](char c) { return c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n'; };
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_sep(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !is_sep(text[j])) ++j;
    if (j == i) break;
    const std::string_view item = text.substr(i, j - i);
    i = j;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return InvalidArgument("option item '" + std::string(item) + "' is not key=value");
    const std::string_view key = item.substr(0, eq);
    const OptionField* f = FindOptionField(key);
    if (!f) {
      size_t n = 0;
      const OptionField* all = OptionFields(&n);
      std::string keys;
      for (size_t k = 0; k < n; ++k) keys += (k ? ", " : "") + std::string(all[k].name);
      return InvalidArgument("unknown option '" + std::string(key) + "' (valid: " + keys + ")");
    }
    uint64_t v = 0;
    EQUARX_RETURN_IF_ERROR(ParseOptionValue(*f, item.substr(eq + 1), &v));
    f->set(&o, v);
  }
  *options = o;
  return Status::Ok();
}

std::string FormatOptions(const AllReduceOptions& o) {
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ',';
    s.append(t[i].name).append("=").append(FormatOptionValue(t[i], t[i].get(o)));
  }
  return s;
}

std::string FormatNonDefaultOptions(const AllReduceOptions& o) {
  const AllReduceOptions d;
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (t[i].get(o) == t[i].get(d)) continue;
    if (!s.empty()) s += ',';
    s.append(t[i].name).append("=").append(FormatOptionValue(t[i], t[i].get(o)));
  }
  return s;
}

Status CheckOptions(const AllReduceOptions& o) {
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  for (size_t i = 0; i < n; ++i) {
    const OptionField& f = t[i];
    const uint64_t v = f.get(o);
    if (f.kind == OptionKind::kEnum) {
      bool known = false;
      for (size_t k = 0; k < f.num_values; ++k) known = known || uint64_t(f.values[k].id) == v;
      if (!known) return InvalidArgument("unknown " + std::string(f.name) + " " + std::to_string(v));
    } else if (!InRange(f, v)) {
      return InvalidArgument(std::string(f.name) + " " + std::to_string(v) + " is out of range [" +
                             std::to_string(f.min) + ", " + std::to_string(f.max) + "]");
    }
  }
  if (o.rounding == Rounding::kStochastic && !SupportsStochasticRounding(o.codec))
    return InvalidArgument("stochastic rounding needs " + std::string(kIntegerCodecs) + ", not " +
                           std::string(CodecName(o.codec)));
  if (o.inner == Algorithm::kHierarchical || o.inner == Algorithm::kNaiveFp8)
    return InvalidArgument("inner " + std::string(AlgorithmName(o.inner)) +
                           " is not an algorithm across hosts (ring, full, full_bidir, semi, "
                           "two_shot or auto)");
  if (o.rotation == Rotation::kHadamard && o.algorithm == Algorithm::kNaiveFp8)
    return InvalidArgument("rotation hadamard needs a block-scaled codec; naive_fp8 has no scales");
  if (o.scale == ScaleFormat::kTwoLevel && !TraitsOf(o.codec).integer)
    return InvalidArgument("scale two_level needs " + std::string(kIntegerCodecs) + ", not " +
                           std::string(CodecName(o.codec)));
  if (o.scale == ScaleFormat::kTwoLevel && o.block % 16 != 0)
    return InvalidArgument("scale two_level needs a block that is a multiple of 16, not " +
                           std::to_string(o.block));
  return Status::Ok();
}

ScaleFormat ScaleOf(const AllReduceOptions& o) {
  return o.scale == ScaleFormat::kDefault ? DefaultScale(o.codec, o.block) : o.scale;
}

size_t BlockOf(const AllReduceOptions& o) { return o.block ? o.block : DefaultBlock(ScaleOf(o)); }

size_t RotationBlockOf(const AllReduceOptions& o) {
  return ScaleOf(o) == ScaleFormat::kTwoLevel ? 16 : BlockOf(o);
}

}  // namespace equarx
