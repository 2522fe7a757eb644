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

/// Whether a call running `plan` rotates, when it would (`requested`: the resolved rotation is
/// hadamard and every rank's input is safe to rotate). `asked` and `chosen` are the caller's
/// rotation and algorithm. A default rotation is for quantized plans only (auto and the size
/// gate may pick the ring); an unquantized f16 hop never carries rotated values (they can
/// exceed f16's range where the sum does not): refused when the caller asked for hadamard and
/// chose this plan itself, else the call runs unrotated. Every rank has the same plan, so every
/// rank reaches the same verdict.
Status PlanRotation(const Plan& plan, bool requested, Rotation asked, Algorithm chosen, bool* rotate);

/// The wire format of a codec at a block size, with its rounding.
codec::WireSpec QuantizedWire(Codec codec, size_t block, Rounding rounding = Rounding::kNearest,
                              uint64_t seed = 0, ScaleFormat scale = ScaleFormat::kF32);

}  // namespace equarx::algo
