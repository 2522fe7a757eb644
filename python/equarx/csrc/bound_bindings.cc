// equarx Python bindings — the documented error bound of an AllReduce (tools/common/error_bound.h,
// the bound docs/algorithms.md states and the C++ tests' oracle checks): per element, the
// largest |result - exact f64 sum| a correct call may give, for the options as the library
// resolves them for these ranks, dtype and size. The Python tests derive their tolerances from it.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "common.h"
#include "error_bound.h"

namespace equarx::py {

void BindBound(nb::module_& m) {
  m.def(
      "error_bound",
      [](std::vector<InBytes> inputs, const std::string& dtype, nb::dict options, uint32_t hosts, OutBytes bound) {
        const DType t = DTypeFromName(dtype);
        if (inputs.empty()) ThrowInvalid("error_bound needs at least one input (one per rank)");
        const size_t count = inputs[0].size() / sizeof(float);
        std::vector<const float*> x;
        for (const InBytes& b : inputs) {
          if (b.size() != count * sizeof(float)) ThrowInvalid("every input must hold the same number of float32 values");
          x.push_back(reinterpret_cast<const float*>(b.data()));
        }
        if (bound.size() != count * sizeof(double)) ThrowInvalid("bound must hold one float64 per element");
        const AllReduceOptions o = tools::ResolveForBound(OptionsFromDict(options), t, count, int(x.size()),
                                                          hosts ? hosts : uint32_t(x.size()));
        tools::ErrorBound(x, count, 0, o, t, reinterpret_cast<double*>(bound.data()));
      },
      nb::arg("inputs"), nb::arg("dtype"), nb::arg("options"), nb::arg("hosts"), nb::arg("bound"),
      "Per-element error bound (float64) of an AllReduce of `inputs` (float32 values of `dtype`).");
}

}  // namespace equarx::py
