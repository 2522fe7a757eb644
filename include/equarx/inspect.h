// equarx — what a build and a machine offer, for tools and users: the codec's SIMD targets,
// the EQUARX_* environment knobs with their current values, and the element-type conversions
// the library itself uses (so that a tool converts exactly as the wire does).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "equarx/status.h"
#include "equarx/types.h"

namespace equarx {

/// The SIMD targets this CPU supports and this build compiled, best first (e.g. "AVX3",
/// "AVX2", "SSE4", ..., "SCALAR"); every one gives the same bits.
std::vector<std::string> SimdTargets();
/// The target the codec's kernels use now (the best of SimdTargets()).
std::string ActiveSimdTarget();

/// One EQUARX_* environment variable the library reads.
struct EnvKnob {
  std::string name;           ///< e.g. "EQUARX_TIMEOUT_MS"
  std::string type;           ///< "uint", "number", "path", or the values it takes
  std::string default_value;  ///< as text
  std::string doc;
  bool set = false;           ///< whether the variable is set (to a non-empty value) now
  std::string value;          ///< its value now, as given
};
/// Every knob (docs/configuration.md), in the library's table order.
std::vector<EnvKnob> EnvKnobs();
/// What the library would say of the environment now: one line per malformed or out-of-range
/// value (ignored: its default applies).
std::vector<std::string> EnvWarnings();

/// Converts `n` values of type `from` at `src` to type `to` at `dst` as the library does:
/// rounding to nearest even, NaN kept (a same-type conversion is a bit copy). Refuses null
/// pointers (with n > 0) and unknown types.
Status ConvertValues(DType from, const void* src, size_t n, DType to, void* dst);

}  // namespace equarx
