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

// One option by name (a key of the library's option table, equarx/options.h), its value as
// text: the same names, values, checks and messages as every other front end.
Status SetOption(AllReduceOptions* o, std::string_view key, std::string_view v) {
  if (v.find_first_of(",; \t\n") != std::string_view::npos)
    return InvalidArgument("option " + std::string(key) + "='" + std::string(v) + "' is not a single value");
  return ParseOptions(std::string(key) + "=" + std::string(v), o);
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

std::string OptionsToString(const AllReduceOptions& o) { return FormatOptions(o); }

Status OptionsFromString(std::string_view text, AllReduceOptions* out) {
  AllReduceOptions o;
  EQUARX_RETURN_IF_ERROR(ParseOptions(text, &o));
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
  m.def("rotations", [] { size_t n; const EnumInfo* t = RotationTable(&n); return Rows(t, n); });
  m.def("scale_formats", [] { size_t n; const EnumInfo* t = ScaleFormatTable(&n); return Rows(t, n); });
  // The option table: (name, alias, kind, allowed values or (min, max), default, doc).
  m.def("option_fields", [] {
    size_t n = 0;
    const OptionField* t = OptionFields(&n);
    const AllReduceOptions d;
    nb::list out;
    for (size_t i = 0; i < n; ++i) {
      const OptionField& f = t[i];
      nb::object allowed;
      if (f.kind == OptionKind::kEnum) {
        nb::list names;
        for (size_t k = 0; k < f.num_values; ++k) names.append(std::string(f.values[k].name));
        allowed = names;
      } else {
        allowed = nb::make_tuple(f.min, f.max);
      }
      const char* kind = f.kind == OptionKind::kEnum ? "enum" : f.kind == OptionKind::kUint ? "uint" : "bool";
      out.append(nb::make_tuple(std::string(f.name), std::string(f.alias), kind, allowed,
                                FormatOptionValue(f, f.get(d)), std::string(f.doc)));
    }
    return out;
  });
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
  BindBound(m);
  BindBootstrap(m);
#ifdef EQUARX_PY_HAVE_MPI
  BindMpi(m);
#endif
#ifdef EQUARX_PY_HAVE_XLA_FFI
  BindXlaFfi(m);
#endif
}
