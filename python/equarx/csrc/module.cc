// equarx Python bindings — module equarx._core: exception translation, the enum tables,
// options parsing. The codec, in-process group, MPI and XLA parts live in their own files.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/tuple.h>

#include <charconv>
#include <cstdint>
#include <tuple>
#include <vector>

#include "common.h"

namespace equarx::py {
namespace {

// dict: StatusCode name -> Python exception class. A strong reference that is never released
// (a static nb::object would be destroyed after the interpreter finalizes).
PyObject* g_error_classes = nullptr;

using Row = std::tuple<int, std::string, std::string>;

std::vector<Row> Rows(const EnumInfo* t, size_t n) {
  std::vector<Row> rows;
  for (size_t i = 0; i < n; ++i)
    rows.emplace_back(t[i].id, std::string(t[i].name), std::string(t[i].description));
  return rows;
}

using TableFn = const EnumInfo* (*)(size_t*);

std::string Names(TableFn table) {
  size_t n = 0;
  const EnumInfo* t = table(&n);
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::string(t[i].name);
  return s;
}

constexpr const char* kOptionKeys =
    "algorithm, phases, codec, block, rounding, seed, microshards, quantize_min_bytes, "
    "f32_partials, timeout_ms, validate, mode";

Status ParseUint(std::string_view key, std::string_view v, uint64_t max, uint64_t* out) {
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty())
    return InvalidArgument("option " + std::string(key) + "='" + std::string(v) +
                           "' is not a non-negative integer");
  if (x > max)
    return InvalidArgument("option " + std::string(key) + "=" + std::string(v) + " is too large");
  *out = x;
  return Status::Ok();
}

Status ParseBool(std::string_view key, std::string_view v, bool* out) {
  if (v == "1" || v == "true" || v == "True") { *out = true; return Status::Ok(); }
  if (v == "0" || v == "false" || v == "False") { *out = false; return Status::Ok(); }
  return InvalidArgument("option " + std::string(key) + "='" + std::string(v) + "' is not a bool");
}

Status SetOption(AllReduceOptions* o, std::string_view key, std::string_view v) {
  uint64_t u = 0;
  if (key == "algorithm") {
    auto a = ParseAlgorithm(v);
    if (!a) return InvalidArgument("unknown algorithm '" + std::string(v) + "' (valid: " +
                                   Names(&AlgorithmTable) + ")");
    o->algorithm = *a;
  } else if (key == "phases") {
    auto p = ParsePhases(v);
    if (!p) return InvalidArgument("unknown phases '" + std::string(v) + "' (valid: " +
                                   Names(&PhasesTable) + ")");
    o->phases = *p;
  } else if (key == "codec") {
    auto c = ParseCodec(v);
    if (!c) return InvalidArgument("unknown codec '" + std::string(v) + "' (valid: " +
                                   Names(&CodecTable) + ")");
    o->codec = *c;
  } else if (key == "rounding") {
    auto r = ParseRounding(v);
    if (!r) return InvalidArgument("unknown rounding '" + std::string(v) + "' (valid: " +
                                   Names(&RoundingTable) + ")");
    o->rounding = *r;
  } else if (key == "seed") {
    EQUARX_RETURN_IF_ERROR(ParseUint(key, v, UINT64_MAX, &u));
    o->seed = u;
  } else if (key == "block") {
    EQUARX_RETURN_IF_ERROR(ParseUint(key, v, UINT32_MAX, &u));
    o->block = size_t(u);
  } else if (key == "microshards") {
    EQUARX_RETURN_IF_ERROR(ParseUint(key, v, UINT32_MAX, &u));
    o->microshards = size_t(u);
  } else if (key == "quantize_min_bytes") {
    EQUARX_RETURN_IF_ERROR(ParseUint(key, v, UINT64_MAX, &u));
    o->quantize_min_bytes = size_t(u);
  } else if (key == "timeout_ms") {
    EQUARX_RETURN_IF_ERROR(ParseUint(key, v, UINT32_MAX, &u));
    o->timeout_ms = uint32_t(u);
  } else if (key == "f32_partials") {
    EQUARX_RETURN_IF_ERROR(ParseBool(key, v, &o->f32_partials));
  } else if (key == "validate") {
    EQUARX_RETURN_IF_ERROR(ParseBool(key, v, &o->validate));
  } else if (key == "mode") {
    if (v == "normal") o->mode = ExecutionMode::kNormal;
    else if (v == "wire_only") o->mode = ExecutionMode::kWireOnly;
    else if (v == "codec_only") o->mode = ExecutionMode::kCodecOnly;
    else return InvalidArgument("unknown mode '" + std::string(v) +
                                "' (valid: normal, wire_only, codec_only)");
  } else {
    return InvalidArgument("unknown option '" + std::string(key) + "' (valid: " + kOptionKeys + ")");
  }
  return Status::Ok();
}

std::string ValueText(nb::handle v, const std::string& key) {
  if (nb::isinstance<nb::bool_>(v)) return nb::cast<bool>(v) ? "1" : "0";
  if (nb::isinstance<nb::int_>(v)) {
    if (PyObject_RichCompareBool(v.ptr(), nb::int_(0).ptr(), Py_LT) == 1)
      ThrowInvalid("option " + key + " must not be negative");
    return nb::str(v).c_str();
  }
  if (nb::isinstance<nb::str>(v)) return nb::cast<std::string>(v);
  // Enum-like objects (e.g. equarx.Algorithm members) carry their table name in .name.
  if (nb::hasattr(v, "value") && nb::hasattr(v, "name"))
    return nb::cast<std::string>(nb::str(v.attr("value")));
  ThrowInvalid("option " + key + " has unsupported type " +
               nb::cast<std::string>(nb::str(nb::handle((PyObject*)Py_TYPE(v.ptr())))));
}

}  // namespace

DType DTypeFromName(std::string_view name) {
  auto d = ParseDType(name);
  if (!d) ThrowInvalid("unsupported dtype '" + std::string(name) + "' (float32, bfloat16, float16)");
  return *d;
}

AllReduceOptions OptionsFromDict(const nb::dict& d) {
  AllReduceOptions o;
  for (auto [k, v] : d) {
    std::string key = nb::cast<std::string>(nb::str(k));
    if (v.is_none()) continue;  // None = library default
    Check(SetOption(&o, key, ValueText(v, key)));
  }
  return o;
}

std::string OptionsToString(const AllReduceOptions& o) {
  const char* modes[] = {"normal", "wire_only", "codec_only"};
  return "algorithm=" + std::string(AlgorithmName(o.algorithm)) +
         ";phases=" + std::string(PhasesName(o.phases)) +
         ";codec=" + std::string(CodecName(o.codec)) + ";block=" + std::to_string(o.block) +
         ";rounding=" + std::string(RoundingName(o.rounding)) + ";seed=" + std::to_string(o.seed) +
         ";microshards=" + std::to_string(o.microshards) +
         ";quantize_min_bytes=" + std::to_string(o.quantize_min_bytes) +
         ";f32_partials=" + (o.f32_partials ? "1" : "0") +
         ";timeout_ms=" + std::to_string(o.timeout_ms) + ";validate=" + (o.validate ? "1" : "0") +
         ";mode=" + modes[int(o.mode) % 3];
}

Status OptionsFromString(std::string_view text, AllReduceOptions* out) {
  AllReduceOptions o;
  while (!text.empty()) {
    size_t semi = text.find(';');
    std::string_view item = text.substr(0, semi);
    text = semi == std::string_view::npos ? std::string_view() : text.substr(semi + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return InvalidArgument("bad option item '" + std::string(item) + "'");
    EQUARX_RETURN_IF_ERROR(SetOption(&o, item.substr(0, eq), item.substr(eq + 1)));
  }
  *out = o;
  return Status::Ok();
}

}  // namespace equarx::py

using namespace equarx;
using namespace equarx::py;

NB_MODULE(_core, m) {
  m.doc() = "equarx native bindings (use the equarx package, not this module)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::gil_scoped_acquire gil;
      std::string code(StatusCodeName(e.code));
      PyObject* cls = PyExc_RuntimeError;
      if (g_error_classes) {
        nb::dict classes = nb::borrow<nb::dict>(g_error_classes);
        if (classes.contains(code.c_str())) cls = nb::object(classes[code.c_str()]).ptr();
      }
      PyErr_SetString(cls, e.message.c_str());
    }
  });
  m.def("_set_error_classes", [](nb::dict d) {
    Py_XDECREF(g_error_classes);
    g_error_classes = d.release().ptr();
  });
  m.def("version", [] { return std::string(EQUARX_VERSION); });
  m.def("algorithms", [] { size_t n; const EnumInfo* t = AlgorithmTable(&n); return Rows(t, n); });
  m.def("phases", [] { size_t n; const EnumInfo* t = PhasesTable(&n); return Rows(t, n); });
  m.def("codecs", [] { size_t n; const EnumInfo* t = CodecTable(&n); return Rows(t, n); });
  m.def("roundings", [] { size_t n; const EnumInfo* t = RoundingTable(&n); return Rows(t, n); });
  m.def("status_codes", [] {
    std::vector<std::tuple<int, std::string>> v;
    for (int c = 0; c <= 64; ++c) {
      std::string name(StatusCodeName(StatusCode(c)));
      if (!name.empty() && name != "unknown") v.emplace_back(c, name);
    }
    return v;
  });
  m.def("canonical_options", [](nb::dict d) { return OptionsToString(OptionsFromDict(d)); },
        "Validates a dict of options and returns its canonical text form.");
  m.def("defaults", [] { return OptionsToString(AllReduceOptions{}); });
  m.attr("min_block") = kMinBlock;
  m.attr("max_block") = kMaxBlock;
  m.attr("default_block") = kDefaultBlock;
  m.attr("max_microshards") = kMaxMicroshards;
#ifdef EQUARX_PY_HAVE_MPI
  m.attr("has_mpi") = true;
#else
  m.attr("has_mpi") = false;
#endif
#ifdef EQUARX_PY_HAVE_XLA_FFI
  m.attr("has_xla_ffi") = true;
#else
  m.attr("has_xla_ffi") = false;
#endif
  BindCodec(m);
  BindGroup(m);
#ifdef EQUARX_PY_HAVE_MPI
  BindMpi(m);
#endif
#ifdef EQUARX_PY_HAVE_XLA_FFI
  BindXlaFfi(m);
#endif
}
