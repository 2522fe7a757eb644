// equarx — per-call options of the AllReduce.
#pragma once

#include <cstddef>
#include <cstdint>

#include "equarx/types.h"

namespace equarx {

inline constexpr size_t kMinBlock = 32;
inline constexpr size_t kMaxBlock = 4096;
inline constexpr size_t kDefaultBlock = 64;
inline constexpr size_t kMaxMicroshards = 64;

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
  Algorithm algorithm = Algorithm::kFullBidir;
  Phases phases = Phases::kRSAG;
  Codec codec = Codec::kInt8;
  /// Elements per scale block, in [kMinBlock, kMaxBlock].
  size_t block = kDefaultBlock;
  /// Rounding of the quantized phases. kStochastic needs an integer codec (int8, int4).
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
  /// EQUARX_TUNE_FILE, else the built-in defaults. Loaded once per path and cached.
  const char* tune_file = nullptr;
  /// Diagnostics only; see ExecutionMode.
  ExecutionMode mode = ExecutionMode::kNormal;
};

}  // namespace equarx
