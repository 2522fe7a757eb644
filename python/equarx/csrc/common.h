// equarx Python bindings — shared helpers: Status -> Python exception, dtype names, options.
//
// Buffers cross the boundary as flat C-contiguous uint8 arrays plus a dtype name; the Python
// layer (equarx/_arrays.py) checks dtype, contiguity and shapes and allocates the outputs, so
// the C++ side stays small and never sees numpy dtypes (bfloat16 comes from ml_dtypes).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "equarx/bootstrap.h"
#include "equarx/communicator.h"
#include "equarx/options.h"
#include "equarx/status.h"
#include "equarx/types.h"

namespace equarx::py {

namespace nb = nanobind;

/// Input and output byte buffers (flat views of numpy arrays).
using InBytes = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using OutBytes = nb::ndarray<uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

/// A failed equarx Status on its way to Python; translated to the class registered for its code
/// (equarx.errors), carrying the library's message unchanged.
struct StatusError : std::exception {
  StatusError(StatusCode c, std::string m) : code(c), message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  StatusCode code;
  std::string message;
};

inline void Check(const Status& s) {
  if (!s.ok()) throw StatusError(s.code(), s.message());
}
[[noreturn]] inline void ThrowInvalid(std::string m) {
  throw StatusError(StatusCode::kInvalidArgument, std::move(m));
}

/// "f32"/"float32", "bf16"/"bfloat16", "f16"/"float16" -> DType, else InvalidArgument.
DType DTypeFromName(std::string_view name);

/// Options from a dict of Python values (names as in AllReduceOptions, enums by name).
/// Unknown keys and bad values raise InvalidArgument naming the valid choices.
AllReduceOptions OptionsFromDict(const nb::dict& d);
/// Canonical text "algorithm=full_bidir;phases=rs+ag;..." and back (used by the XLA handler,
/// whose attributes are strings).
std::string OptionsToString(const AllReduceOptions& o);
Status OptionsFromString(std::string_view text, AllReduceOptions* out);

/// One rank's Communicator (an MPI rank, say), called from one Python thread at a time.
class PyComm {
 public:
  explicit PyComm(std::unique_ptr<Communicator> c);
  ~PyComm();
  Communicator& comm() { return *comm_; }
  /// Returns the telemetry dict if `stats`, else None. `residual`: empty or one float32 buffer.
  nb::object AllReduce(InBytes send, OutBytes recv, const std::string& dtype, nb::dict options,
                       std::vector<OutBytes> residual, bool stats);

 private:
  std::unique_ptr<Communicator> comm_;
  std::mutex mu_;
};

/// The set-up exchange of CreateCommunicator over a Python callable `exchange(mine: bytes) ->
/// bytes` (every rank's bytes in rank order) for a group of `size`: it takes the GIL for each
/// call, checks the length, and turns a Python exception into a Status (TimeoutError:
/// kTimeout, else kRemoteError). `exchange` must outlive the returned function, and the caller
/// must not hold the GIL while CreateCommunicator runs.
AllGatherFn PythonExchange(const nb::object& exchange, int size);

void BindCodec(nb::module_& m);
void BindGroup(nb::module_& m);
void BindBound(nb::module_& m);
void BindBootstrap(nb::module_& m);
#ifdef EQUARX_PY_HAVE_MPI
void BindMpi(nb::module_& m);
#endif
#ifdef EQUARX_PY_HAVE_XLA_FFI
void BindXlaFfi(nb::module_& m);
#endif

}  // namespace equarx::py
