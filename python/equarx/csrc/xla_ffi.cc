// equarx Python bindings — the XLA FFI handler behind equarx.jax.psum (CPU only).
//
// Inside shard_map over N host devices of one process, XLA runs each device's program on its
// own thread. Each device's call of this handler passes its shard, an int32[2] operand
// [rank within the reduced axes, index of its group] (lax.axis_index computed in JAX), and
// the attributes `site` (a number unique to the psum call site, fixed at trace time), `size`
// (ranks in a group) and `options` (canonical option text). The handler finds, or creates on
// first use, the in-process group of (site, group) and runs rank `rank`'s AllReduce on the
// calling thread; the in-process transport makes the N threads meet. A group per call site
// keeps independent psums that XLA may run concurrently from sharing communicators.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common.h"
#include "equarx/communicator.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace equarx::py {
namespace {

struct SiteGroup {
  std::vector<std::unique_ptr<Communicator>> comms;
  AllReduceOptions options;
  std::string options_text;
};

std::mutex g_mu;
std::map<std::pair<int64_t, int64_t>, std::unique_ptr<SiteGroup>> g_groups;

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

Status GroupFor(int64_t site, int64_t group, int64_t size, std::string_view options, SiteGroup** out) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& slot = g_groups[{site, group}];
  if (!slot) {
    auto g = std::make_unique<SiteGroup>();
    EQUARX_RETURN_IF_ERROR(OptionsFromString(options, &g->options));
    EQUARX_RETURN_IF_ERROR(CreateInProcessGroup(int(size), &g->comms));
    g->options_text = std::string(options);
    slot = std::move(g);
  }
  if (slot->comms.size() != size_t(size) || slot->options_text != options)
    return Internal("psum call site " + std::to_string(site) + " reused with another group size or options");
  *out = slot.get();
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
  SiteGroup* g = nullptr;
  if (Status s = GroupFor(site, group, size, options, &g); !s.ok()) return Fail(s);
  Status s = g->comms[size_t(rank)]->AllReduce(x.untyped_data(), y->untyped_data(),
                                               x.element_count(), t, g->options);
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
  m.def("xla_release_groups", [] {
    std::lock_guard<std::mutex> lock(g_mu);
    g_groups.clear();
  });
}

}  // namespace equarx::py
