// equarx call I/O: everything a schedule needs of one collective call, in one object — its
// transport requests (requests.h), the codec kernels it runs (kernels.h) and this rank's
// contribution and result (contribution.h) — set up in one step. The diagnostic execution
// modes switch off the codec (wire only) or the messages (codec only).
#pragma once

#include "algo/contribution.h"
#include "algo/kernels.h"
#include "algo/plan.h"
#include "algo/requests.h"
#include "algo/scratch.h"
#include "equarx/options.h"

namespace equarx::algo {

class CallIo : public RequestSet, public Kernels, public Contribution {
 public:
  /// `requests` requests of the call `a` in scratch; `staged`, `tmp`, `tmp_elems` as for
  /// Contribution.
  CallIo(Scratch* s, size_t requests, const RunArgs& a, float* staged, float* tmp, size_t tmp_elems)
      : RequestSet(a.transport, s, requests, a.deadline, a.mode != ExecutionMode::kCodecOnly),
        Kernels(a.pool, a.stats, a.mode != ExecutionMode::kWireOnly),
        Contribution(*this, a, staged, tmp, tmp_elems) {}
};

}  // namespace equarx::algo
