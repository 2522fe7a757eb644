// equarx algorithm selector: options -> the plan every rank runs.
#pragma once

#include "algo/plan.h"
#include "algo/tune_table.h"
#include "equarx/options.h"

namespace equarx::algo {

/// The plan for this call on `ranks` >= 2 ranks. Options must already be validated.
/// `auto` takes its algorithm and phases from `table` by message size; below
/// options.quantize_min_bytes the unquantized ring is chosen.
Plan SelectPlan(const AllReduceOptions& options, DType dtype, size_t count, int ranks,
                const TuneTable& table);

/// The wire format of a codec at a block size, with its rounding.
codec::WireSpec QuantizedWire(Codec codec, size_t block, Rounding rounding = Rounding::kNearest,
                              uint64_t seed = 0, ScaleFormat scale = ScaleFormat::kF32);

}  // namespace equarx::algo
