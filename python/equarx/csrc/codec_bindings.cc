// equarx Python bindings — the wire codecs (src/codec/codec.h) on flat byte buffers:
// formats, wire_bytes, encode (optionally with telemetry), decode, dtype conversion and the
// SIMD target controls the tests use to check bitwise equality across targets.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <tuple>
#include <vector>

#include "codec/codec.h"
#include "common.h"

namespace equarx::py {
namespace {

bool KnownFormat(int id) {
  return id >= 0 && id < 256 && std::string_view(codec::FormatName(codec::Format(id))) != "unknown";
}

bool IsRaw(codec::Format f) { return std::string_view(codec::FormatName(f)).rfind("raw_", 0) == 0; }

codec::WireSpec Spec(int format, size_t block, int rounding, uint64_t seed, uint64_t stream,
                     uint64_t offset) {
  if (!KnownFormat(format)) ThrowInvalid("unknown wire format id " + std::to_string(format));
  const auto f = codec::Format(format);
  if (!IsRaw(f) && (block < kMinBlock || block > kMaxBlock))
    ThrowInvalid("block size " + std::to_string(block) + " is out of range [" +
                 std::to_string(kMinBlock) + ", " + std::to_string(kMaxBlock) + "]");
  if (rounding != codec::kRoundNearestEven && rounding != codec::kRoundStochastic)
    ThrowInvalid("rounding must be 0 (nearest even) or 1 (stochastic)");
  codec::WireSpec s;
  s.format = f;
  s.block = uint32_t(IsRaw(f) ? kDefaultBlock : block);
  s.rounding = uint8_t(rounding);
  s.seed = seed;
  s.stream = stream;
  s.offset = offset;
  return s;
}

size_t Elements(size_t bytes, DType t, const char* what) {
  const size_t es = DTypeSize(t);
  if (bytes % es) ThrowInvalid(std::string(what) + " is not a whole number of elements");
  return bytes / es;
}

void CheckWire(const codec::WireSpec& s, size_t n, size_t have, const char* what) {
  const size_t need = codec::WireBytes(s, n);
  if (have != need)
    ThrowInvalid(std::string(what) + " holds " + std::to_string(have) + " bytes but " +
                 std::to_string(n) + " elements of " + codec::FormatName(s.format) + " need " +
                 std::to_string(need));
}

}  // namespace

void BindCodec(nb::module_& m) {
  m.def("formats", [] {
    std::vector<std::tuple<int, std::string>> v;
    for (int id = 0; id < 256; ++id)
      if (KnownFormat(id)) v.emplace_back(id, codec::FormatName(codec::Format(id)));
    return v;
  });
  // The integer block formats' code range q (their rows of the block format table), by name.
  m.def("integer_levels", [] {
    std::vector<std::tuple<std::string, int>> v;
    for (const codec::BlockFormatInfo& r : codec::kBlockFormats)
      if (r.mbits == 0) v.emplace_back(std::string(CodecName(r.codec)), int(r.q));
    return v;
  });
  m.def("wire_bytes",
        [](int format, size_t block, size_t n) { return codec::WireBytes(Spec(format, block, 0, 0, 0, 0), n); },
        nb::arg("format"), nb::arg("block"), nb::arg("n"));
  m.def(
      "encode",
      [](int format, size_t block, int rounding, uint64_t seed, uint64_t stream, uint64_t offset,
         const std::string& dtype, InBytes src, OutBytes wire, bool reference, bool stats) {
        const auto spec = Spec(format, block, rounding, seed, stream, offset);
        const DType t = DTypeFromName(dtype);
        const size_t n = Elements(src.size(), t, "the input");
        CheckWire(spec, n, wire.size(), "the wire buffer");
        codec::EncodeStats st;
        {
          nb::gil_scoped_release nogil;
          if (reference) codec::ref::Encode(spec, t, src.data(), n, wire.data(), stats ? &st : nullptr);
          else codec::Encode(spec, t, src.data(), n, wire.data(), stats ? &st : nullptr);
        }
        return std::make_tuple(st.clipped, st.sum_sq_err_est, double(st.max_abs_err_est));
      },
      nb::arg("format"), nb::arg("block"), nb::arg("rounding"), nb::arg("seed"), nb::arg("stream"),
      nb::arg("offset"), nb::arg("dtype"), nb::arg("src"), nb::arg("wire"), nb::arg("reference"),
      nb::arg("stats"));
  m.def(
      "decode",
      [](int format, size_t block, InBytes wire, const std::string& dtype, OutBytes dst, bool reference) {
        const auto spec = Spec(format, block, 0, 0, 0, 0);
        const DType t = DTypeFromName(dtype);
        const size_t n = Elements(dst.size(), t, "the output");
        CheckWire(spec, n, wire.size(), "the wire buffer");
        nb::gil_scoped_release nogil;
        if (reference) codec::ref::Decode(spec, wire.data(), n, t, dst.data());
        else codec::Decode(spec, wire.data(), n, t, dst.data());
      },
      nb::arg("format"), nb::arg("block"), nb::arg("wire"), nb::arg("dtype"), nb::arg("dst"),
      nb::arg("reference"));
  m.def(
      "convert",
      [](const std::string& src_dtype, InBytes src, const std::string& dst_dtype, OutBytes dst) {
        const DType s = DTypeFromName(src_dtype), d = DTypeFromName(dst_dtype);
        const size_t n = Elements(src.size(), s, "the input");
        if (dst.size() != n * DTypeSize(d)) ThrowInvalid("output size does not match the input");
        nb::gil_scoped_release nogil;
        codec::Convert(s, src.data(), n, d, dst.data());
      },
      nb::arg("src_dtype"), nb::arg("src"), nb::arg("dst_dtype"), nb::arg("dst"));
  m.def("simd_targets", [] {
    std::vector<std::tuple<int64_t, std::string>> v;
    for (int64_t t : codec::AvailableTargets()) v.emplace_back(t, codec::TargetName(t));
    return v;
  });
  m.def("current_simd_target", [] { return codec::TargetName(codec::CurrentTarget()); });
  m.def("force_simd_target", [](int64_t t) { codec::ForceTarget(t); }, nb::arg("target"));
}

}  // namespace equarx::py
