// equarx Python bindings — the XLA FFI handler behind equarx.jax.psum (CPU only).
//
// Inside shard_map over host devices, XLA runs each device's program on its own thread. Each
// device's call of this handler passes its shard, an int32[2] operand [rank within the reduced
// axes, index of its group] (lax.axis_index computed in JAX), and the attributes `site` (a
// number unique to the psum call site, fixed at trace time), `size` (ranks in a group) and
// `options` (canonical option text). A group per call site keeps independent psums that XLA
// may run concurrently from sharing communicators.
//
// One process: the handler finds, or creates on first use, the in-process group of (site,
// group) and runs rank `rank`'s AllReduce on the calling thread; the in-process transport
// makes the N threads meet.
//
// Several processes (jax.distributed.initialize; equarx.jax sets an exchange factory): each
// device's rank of (site, group) gets a communicator of its own, created on its first call
// through CreateCommunicator (include/equarx/bootstrap.h) with an exchange over JAX's
// distributed key-value store (the Python factory's, called with the GIL held), so ranks of
// this process and of the others meet over equarx's own data path (EQUARX_DATA_PATH).
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common.h"
#include "equarx/bootstrap.h"
#include "equarx/communicator.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace equarx::py {
namespace {

struct SiteGroup {
  std::vector<std::unique_ptr<Communicator>> comms;  // several processes: null until made
  std::vector<std::unique_ptr<std::mutex>> making;   // several processes: one per rank
  AllReduceOptions options;
  std::string options_text;
};

std::mutex g_mu;
std::map<std::pair<int64_t, int64_t>, std::unique_ptr<SiteGroup>> g_groups;
// factory(site, group, rank, size) -> exchange(mine: bytes) -> bytes; set for multi-process
// jobs (a strong reference; cleared at exit).
PyObject* g_exchange_factory = nullptr;

ffi::ErrorCode ToFfi(StatusCode c) {
  switch (c) {
    case StatusCode::kInvalidArgument: return ffi::ErrorCode::kInvalidArgument;
    case StatusCode::kMismatch: return ffi::ErrorCode::kFailedPrecondition;
    case StatusCode::kTimeout: return ffi::ErrorCode::kDeadlineExceeded;
    case StatusCode::kUnsupported: return ffi::ErrorCode::kUnimplemented;
    case StatusCode::kRemoteError: return ffi::ErrorCode::kAborted;
    default: return ffi::ErrorCode::kInternal;
  }
}

ffi::Error Fail(const Status& s) {
  return ffi::Error(ToFfi(s.code()), "equarx.jax.psum: " + s.ToString());
}

Status GroupFor(int64_t site, int64_t group, int64_t size, std::string_view options, bool remote,
                SiteGroup** out) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& slot = g_groups[{site, group}];
  if (!slot) {
    auto g = std::make_unique<SiteGroup>();
    EQUARX_RETURN_IF_ERROR(OptionsFromString(options, &g->options));
    if (remote) {
      g->comms.resize(size_t(size));
      for (int64_t r = 0; r < size; ++r) g->making.push_back(std::make_unique<std::mutex>());
    } else {
      EQUARX_RETURN_IF_ERROR(CreateInProcessGroup(int(size), &g->comms));
    }
    g->options_text = std::string(options);
    slot = std::move(g);
  }
  if (slot->comms.size() != size_t(size) || slot->options_text != options)
    return Internal("psum call site " + std::to_string(site) + " reused with another group size or options");
  *out = slot.get();
  return Status::Ok();
}

// Several processes: rank `rank`'s communicator of the group, made on first use through the
// Python exchange (collective with the group's other ranks, here and in other processes).
Status RemoteComm(SiteGroup* g, int64_t site, int64_t group, int rank, int size, Communicator** out) {
  std::lock_guard<std::mutex> making(*g->making[size_t(rank)]);
  if (!g->comms[size_t(rank)]) {
    nb::object exchange;
    {
      nb::gil_scoped_acquire gil;
      try {
        exchange = nb::borrow(g_exchange_factory)(site, group, rank, size);
      } catch (nb::python_error& e) {
        return Internal(std::string("the psum exchange factory failed: ") + e.what());
      }
    }
    BootstrapOptions o;
    EQUARX_RETURN_IF_ERROR(BootstrapOptions::FromEnvironment(&o));
    std::unique_ptr<Communicator> c;
    const Status st = CreateCommunicator(rank, size, PythonExchange(exchange, size), o, &c);
    {
      nb::gil_scoped_acquire gil;
      exchange.reset();
    }
    EQUARX_RETURN_IF_ERROR(st);
    g->comms[size_t(rank)] = std::move(c);
  }
  *out = g->comms[size_t(rank)].get();
  return Status::Ok();
}

ffi::Error PsumImpl(ffi::AnyBuffer x, ffi::Buffer<ffi::S32> where, ffi::Result<ffi::AnyBuffer> y,
                    int64_t site, int64_t size, std::string_view options) {
  DType t;
  switch (x.element_type()) {
    case ffi::DataType::F32: t = DType::kFloat32; break;
    case ffi::DataType::BF16: t = DType::kBFloat16; break;
    case ffi::DataType::F16: t = DType::kFloat16; break;
    default:
      return Fail(InvalidArgument("unsupported element type (float32, bfloat16 or float16)"));
  }
  if (where.element_count() != 2) return Fail(Internal("rank operand must hold 2 values"));
  const int32_t rank = where.typed_data()[0], group = where.typed_data()[1];
  if (size < 1 || rank < 0 || rank >= size)
    return Fail(Internal("rank " + std::to_string(rank) + " outside a group of " + std::to_string(size)));
  if (y->element_count() != x.element_count() || y->element_type() != x.element_type())
    return Fail(Internal("output does not match the input"));
  const bool remote = g_exchange_factory != nullptr;
  SiteGroup* g = nullptr;
  if (Status s = GroupFor(site, group, size, options, remote, &g); !s.ok()) return Fail(s);
  Communicator* comm = g->comms[size_t(rank)].get();
  if (remote) {
    if (Status s = RemoteComm(g, site, group, rank, int(size), &comm); !s.ok()) return Fail(s);
  }
  Status s = comm->AllReduce(x.untyped_data(), y->untyped_data(), x.element_count(), t, g->options);
  if (!s.ok()) return Fail(s);
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(EquarxPsum, PsumImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("site")
                                  .Attr<int64_t>("size")
                                  .Attr<std::string_view>("options"));

void BindXlaFfi(nb::module_& m) {
  m.def("xla_psum_handler", [] { return nb::capsule(reinterpret_cast<void*>(&EquarxPsum)); });
  m.def("xla_set_exchange_factory", [](nb::object factory) {
    // Set before the first multi-process psum runs; None clears it (equarx.jax does at exit,
    // so that the reference does not keep Python objects alive past the interpreter's end).
    std::lock_guard<std::mutex> lock(g_mu);
    Py_XDECREF(g_exchange_factory);
    g_exchange_factory = factory.is_none() ? nullptr : factory.release().ptr();
  }, nb::arg("factory").none());
  m.def("xla_release_groups", [] {
    std::lock_guard<std::mutex> lock(g_mu);
    g_groups.clear();
  });
}

}  // namespace equarx::py
