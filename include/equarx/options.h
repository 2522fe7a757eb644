// equarx — per-call options of the AllReduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "equarx/status.h"
#include "equarx/types.h"

namespace equarx {

inline constexpr size_t kMinBlock = 16;
inline constexpr size_t kMaxBlock = 4096;
/// The block of one-level scales (f32, bf16) when a call leaves it unset, and the codec API's.
inline constexpr size_t kDefaultBlock = 64;
/// The block of two-level scales when a call leaves it unset (docs/performance.md, "The
/// default point").
inline constexpr size_t kDefaultTwoLevelBlock = 128;
inline constexpr size_t kMaxMicroshards = 64;
/// A call that leaves microshards unset cuts each shard into one microshard per this many
/// elements, 1 to kDefaultMicroshards (docs/benchmarks.md, "Steps, messages and microshards").
inline constexpr size_t kMicroshardElements = size_t(1) << 14;
inline constexpr size_t kDefaultMicroshards = 4;
inline constexpr uint32_t kMaxThreads = 64;

/// Diagnostic execution modes for measuring how well coding overlaps communication
/// (benchmarks only: the results of the two partial modes are meaningless).
enum class ExecutionMode : uint8_t {
  kNormal = 0,
  kWireOnly = 1,   ///< every message of the schedule, no codec work
  kCodecOnly = 2,  ///< every codec kernel of the schedule on stale buffers, no messages
};

/// Options of one AllReduce call. Every rank must pass the same values (checked).
/// Option > environment variable (EQUARX_*) > default, see docs/configuration.md.
struct AllReduceOptions {
  Algorithm algorithm = Algorithm::kAuto;  ///< by message size (docs/algorithms.md, "auto")
  Phases phases = Phases::kRSAG;
  Codec codec = Codec::kInt8;
  /// Elements per scale block, in [kMinBlock, kMaxBlock]; 0 = DefaultBlock(scale as resolved):
  /// 128 with two-level scales, else 64.
  size_t block = 0;
  /// How each block's scale is stored: f32 (4 bytes), bf16 (2 bytes; block 32 with bf16
  /// scales costs what block 64 with f32 scales costs) or two-level (bf16 per block and 4 bits
  /// per 8 elements); kDefault = DefaultScale(codec, block): two_level for the integer codecs
  /// (unless the block asked for is not a multiple of 16), f32 for fp8.
  ScaleFormat scale = ScaleFormat::kDefault;
  /// Rounding of the quantized phases. kStochastic needs an integer codec (int8, int6, int5, int4).
  Rounding rounding = Rounding::kNearest;
  /// Seed of stochastic rounding. The random bits of a value depend only on (seed, the hop
  /// that encodes it, its index in the tensor): the same seed gives the same result bits on
  /// every run. Pass a different seed per call (e.g. the training step) for rounding that is
  /// independent across calls.
  uint64_t seed = 0;
  /// Pieces each shard is cut into so that coding overlaps communication; 0 = default.
  size_t microshards = 0;
  /// Messages smaller than this many bytes (count * dtype size) use the unquantized ring.
  /// 0 never switches, so the numerics never depend on the message size.
  size_t quantize_min_bytes = 0;
  /// Unquantized reduce-scatter hops (the `ring` algorithm, and phases `ag`) carry f32
  /// partial sums instead of the input dtype: no rounding per hop, twice the bf16 bytes.
  bool f32_partials = false;
  /// Per-call deadline in milliseconds; 0 = EQUARX_TIMEOUT_MS or its default.
  uint32_t timeout_ms = 0;
  /// Exchange a small descriptor first so that invalid or mismatched calls fail on every rank.
  bool validate = true;
  /// Crossover table for Algorithm::kAuto (a file written by equarx-tune); nullptr =
  /// EQUARX_TUNE_FILE; without either, auto asks the cost model for a table (on the network of
  /// EQUARX_LINK_GBIT, EQUARX_STEP_US and EQUARX_MESSAGE_US; docs/configuration.md). Loaded or
  /// built once, cached.
  const char* tune_file = nullptr;
  /// Diagnostics only; see ExecutionMode.
  ExecutionMode mode = ExecutionMode::kNormal;
  /// Algorithm::kHierarchical: the algorithm across hosts (any but naive_fp8 and hierarchical;
  /// auto picks it by the shard's size and the number of hosts).
  Algorithm inner = Algorithm::kAuto;
  /// Algorithm::kHierarchical: ranks on each host, in rank order (ranks 0..R-1 on the first
  /// host, ...; the last host may have fewer); 0 = EQUARX_RANKS_PER_HOST, else 1.
  uint32_t ranks_per_host = 0;
  /// Rotation before the first encode, undone after the last decode (see Rotation). Its random
  /// signs come from `seed`. kDefault = EQUARX_ROTATION, else DefaultRotation(codec).
  Rotation rotation = Rotation::kDefault;
  /// Threads that run this rank's codec kernels (encode, decode-accumulate-encode, decode and
  /// the rotation), each on its own part of a microshard; the results are the same bits for
  /// every value. 0 = EQUARX_THREADS, else its default: this process's cores divided by the
  /// ranks that share them, capped (docs/configuration.md). Persistent: created once per
  /// communicator and value. Per rank (not checked across ranks).
  uint32_t threads = 0;
};

/// The rotation `kDefault` resolves to for a quantized plan of this codec when EQUARX_ROTATION
/// is not set (chosen by measurement: docs/accuracy.md).
Rotation DefaultRotation(Codec codec);
/// The scale format `kDefault` resolves to for this codec and block as asked (0 = unset):
/// the codec's measured default (docs/performance.md, "The default point"), or f32 where a
/// block asked for cannot take it (two-level scales need a multiple of 16).
ScaleFormat DefaultScale(Codec codec, size_t block);
/// The block an unset `block` (0) resolves to under scale format `scale` (resolved):
/// kDefaultTwoLevelBlock for two-level scales, else kDefaultBlock.
size_t DefaultBlock(ScaleFormat scale);

// ---- Options as data --------------------------------------------------------------------
// One table describes every field of AllReduceOptions (except tune_file, a path): it drives
// validation, the cross-rank descriptor and its diff, the C API mapping, text parsing and
// formatting, the tools' flags and the Python keywords. Adding an option is one row in
// src/core/options.cc plus the field here (C reaches it through equarxConfig_t's `options`
// text); an option with an EQUARX_* variable adds the variable's row to the knob table
// (src/common/env.h), whose range, default and doc the option's row takes.

enum class OptionKind : uint8_t {
  kEnum = 0,  ///< one of `values` (by name in text)
  kUint = 1,  ///< an unsigned integer in [min, max]; sizes accept K/M/G suffixes in text
  kBool = 2,  ///< 0/1, false/true
};

struct OptionField {
  std::string_view name;   ///< key in option text, Python keyword, tool flag --name
  std::string_view alias;  ///< a shorter key and tool flag (e.g. "algo"), or ""
  OptionKind kind;
  const EnumInfo* values;  ///< kEnum: the allowed values
  size_t num_values;
  uint64_t min, max;       ///< kUint: inclusive range
  bool agreed;             ///< every rank must pass the same value (checked on every call)
  std::string_view env;    ///< the EQUARX_* variable used when the option is 0 / default, or ""
  std::string_view doc;    ///< one line
  uint64_t (*get)(const AllReduceOptions&);
  void (*set)(AllReduceOptions*, uint64_t);
};

/// The table, in canonical order.
const OptionField* OptionFields(size_t* n);
/// The row named `name` (or whose alias is `name`; '-' and '_' are the same), or null.
const OptionField* FindOptionField(std::string_view name);
/// A value as text: enum names, decimal integers, "0"/"1" for bools.
std::string FormatOptionValue(const OptionField& f, uint64_t value);
/// Parses one value of field `f` (enum name or alias, integer with optional K/M/G suffix for
/// sizes, bool as 0/1/true/false). Range-checked; the message names the option.
Status ParseOptionValue(const OptionField& f, std::string_view text, uint64_t* value);
/// Applies "key=value" items separated by ',' ';' or whitespace to *options (keys as
/// FindOptionField). Unknown keys and bad values are kInvalidArgument; *options is changed only
/// when the whole text is valid.
Status ParseOptions(std::string_view text, AllReduceOptions* options);
/// Every table field as "key=value" joined by ',' in table order (a ParseOptions round trip
/// gives the same options; tune_file is not included).
std::string FormatOptions(const AllReduceOptions& options);
/// Only the fields that differ from the defaults ("" when none).
std::string FormatNonDefaultOptions(const AllReduceOptions& options);
/// Checks every field's range and the combinations that make no sense (e.g. stochastic
/// rounding with an fp8 codec, rotation with naive_fp8). Buffers are not looked at.
Status CheckOptions(const AllReduceOptions& options);
/// The options with every "from the environment / the default" value filled in as a call
/// resolves them (microshards, timeout_ms, rotation, scale, block; EQUARX_* variables read
/// now): what every rank checks, describes and runs.
AllReduceOptions ResolveOptions(const AllReduceOptions& options);
/// The scale format a call of `options` runs: `scale`, or DefaultScale(codec, block) where it
/// is kDefault.
ScaleFormat ScaleOf(const AllReduceOptions& options);
/// The block a call of `options` runs: `block`, or DefaultBlock(ScaleOf(options)) where it is 0.
size_t BlockOf(const AllReduceOptions& options);
/// Elements per rotation block (rotation = hadamard): the scale block (BlockOf), or 16 (two
/// sub-blocks) with two-level scales (ScaleOf), whose steps follow 8 elements each.
size_t RotationBlockOf(const AllReduceOptions& options);

}  // namespace equarx
