// equarx call resolver — the one place that decides what a call runs.
//
// A call is asked for with options (some left at 0 / default), on `ranks` ranks, for `count`
// elements of `dtype`. Resolve() decides, in this order:
//   1. the options' values: an explicit option wins, else the EQUARX_* variable read when the
//      communicator was made (env::Settings), else the default (ResolveDefaults);
//   2. whether they are valid (CheckOptions);
//   3. auto's table, when the call uses auto: the tune file's, or without one the cost model's
//      (AutoTables: cached per set of inputs; a tune file that cannot be loaded is the call's
//      error);
//   4. the plan: auto's pick by size, then the size gate (below quantize_min_bytes a quantized
//      algorithm becomes its unquantized twin: the ring, or one_shot_raw for one_shot), or the
//      algorithm asked for; hierarchical runs one inner plan per shard chunk (InnerPlan);
//   5. whether the plan rotates: a rotation asked for explicitly (option hadamard) applies to
//      any plan; the default rotation (EQUARX_ROTATION, else the codec's) to quantized plans
//      only. A plan with an unquantized f16 hop never rotates (rotated values can exceed f16's
//      range where the sum does not); asking for hadamard on such a plan the caller chose is
//      refused;
//   6. how a rotation is protected from inputs it must not see (NaN, Inf, |x| >= 2^100;
//      core/rotation_guard.h runs the protocol): a call whose every rank could repeat it (out
//      of place, or one_shot, which writes its output last; no error feedback; normal mode; a
//      flat plan) rotates guarded, any other rank checks its input first.
// Every input is the same on every rank of a valid call, so every rank decides the same; the
// descriptor exchange (core/validate.h) proves the inputs equal.
//
// The communicator, the cost model, the tools' error bound and the byte counts all ask this
// file; nothing else decides any of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "algo/cost_model.h"
#include "algo/plan.h"
#include "algo/tune_table.h"
#include "common/env.h"
#include "equarx/options.h"

namespace equarx::algo {

/// The options with every "use the environment / the default" value filled in (microshards,
/// timeout, ranks_per_host, threads, rotation, scale, block): what every rank checks,
/// describes and runs.
/// `hosts_found`: the transport's layout (Transport::ranks_per_host), the default of
/// ranks_per_host after EQUARX_RANKS_PER_HOST.
AllReduceOptions ResolveDefaults(const AllReduceOptions& asked, const env::Settings& env, int hosts_found = 1);

/// The tables auto resolves through, built or loaded once and kept (the last few of each).
class AutoTables {
 public:
  explicit AutoTables(const env::Settings& env);
  /// The table for calls of `o` (resolved, but with the rotation as asked) on `ranks` ranks of
  /// `dtype`: the tune file that o.tune_file, else EQUARX_TUNE_FILE names, else the cost
  /// model's on the environment's network (EQUARX_LINK_GBIT, EQUARX_STEP_US,
  /// EQUARX_MESSAGE_US). A file that cannot be loaded gives the built-in table and its error in
  /// *status. *hash: the table's
  /// Hash(), computed once per table. The table returned stays where it is while this object
  /// lives, until the tune file changes or 32 newer modeled tables were made: a Resolved may
  /// keep pointing to it while later calls resolve (the oldest modeled table goes first).
  const TuneTable& For(const AllReduceOptions& o, DType dtype, int ranks, uint64_t* hash, Status* status);

 private:
  struct Modeled {
    AllReduceOptions inputs;  // ModelTableInputs
    DType dtype;
    int ranks;
    TuneTable table;
    uint64_t hash;
  };
  std::string env_file_;
  AutoNetwork network_;
  std::string file_;  // the file `loaded` came from ("" = none yet)
  TuneTable loaded_;
  uint64_t loaded_hash_ = 0;
  Status loaded_status_;
  std::deque<Modeled> modeled_;  // the cost model's tables, newest last (a deque: adding one moves none)
};

/// How a rotation is protected from inputs it must not see (core/rotation_guard.h).
enum class RotationGuard : uint8_t {
  kNone = 0,       ///< the call does not rotate
  kCheckFirst = 1, ///< this rank checks its input before any data moves
  kGuarded = 2,    ///< this rank rotates guarded and repeats the call unrotated on a NaN/Inf
};

/// A call as asked.
struct Call {
  AllReduceOptions options;  ///< as the caller passed them
  DType dtype = DType::kFloat32;
  size_t count = 0;
  int ranks = 1;
  bool in_place = false;  ///< send and recv share bytes (same buffer)
  bool residual = false;  ///< error feedback (AllReduceExtras::residual)
  int hosts_found = 1;    ///< the transport's layout (Transport::ranks_per_host)
};

/// Everything decided about a call.
struct Resolved {
  AllReduceOptions options;  ///< every default filled in (ResolveDefaults)
  const TuneTable* table = nullptr;  ///< auto's table (the built-in one when auto is not used)
  bool uses_auto = false;  ///< algorithm auto, or hierarchical with inner auto
  uint64_t table_hash = 0;  ///< the table's Hash() when the call uses auto (the descriptor's), else 0
  bool hierarchical = false;
  Plan plan;  ///< the flat plan that runs (not hierarchical)
  /// The plan rotates each contribution (rotation block RotationBlockOf(options)), unless an
  /// input forbids it (guard).
  bool rotate = false;
  RotationGuard guard = RotationGuard::kNone;
  /// Explicit request of the caller: option rotation = hadamard (not the default's).
  bool rotation_asked = false;
};

/// Resolves `call` under `env`; `tables` gives auto its table. An invalid call (bad options, a
/// bad tune file, a refused combination) returns its error; *out then holds the resolved
/// options and the table, but no plan.
Status Resolve(const Call& call, const env::Settings& env, AutoTables* tables, Resolved* out);
/// The same with auto's table given (the cost model's candidates); `table` must outlive *out.
Status Resolve(const Call& call, const env::Settings& env, const TuneTable& table, Resolved* out);

/// The plan of one inner AllReduce of hierarchical (a chunk of `count` elements over `hosts`
/// ranks) and whether it rotates, as Resolve decides a flat call's (`r` resolved for the
/// hierarchical call).
Status InnerPlan(const Resolved& r, DType dtype, size_t count, int hosts, Plan* plan, bool* rotate);

/// The table a call of `asked` options on `ranks` ranks of `dtype` resolves auto through
/// under `env` (AutoTables's, copied; the built-in one when the call does not use auto or is
/// invalid): for tools and tests that look at one call's table.
TuneTable AutoTableOf(const AllReduceOptions& asked, DType dtype, int ranks, const env::Settings& env);

/// The flat plan of options `o` (resolved, valid) for `count` elements on `ranks` >= 2 ranks:
/// auto's pick in `table`, the size gate, the plan builder. (Resolve's step 4.)
/// `rotation_asked`: the caller asked for rotation hadamard (Resolved::rotation_asked).
Plan SelectPlan(const AllReduceOptions& o, DType dtype, size_t count, int ranks, const TuneTable& table,
                bool rotation_asked);

/// The wire format of a codec at a block size, with its rounding.
codec::WireSpec QuantizedWire(Codec codec, size_t block, Rounding rounding = Rounding::kNearest,
                              uint64_t seed = 0, ScaleFormat scale = ScaleFormat::kF32);

}  // namespace equarx::algo
