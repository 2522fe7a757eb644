// equarx environment knobs: the table of env.h as data, and Read() walking it.
#include "common/env.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace equarx::env {
namespace {

// %.10g: a number as a user types it, without std::to_string's trailing zeros.
std::string Number(double x) {
  char s[32];
  std::snprintf(s, sizeof s, "%.10g", x);
  return s;
}

// Reads a number into *out when the variable is set: `parse` (strtoull or strtod) must take
// all of it, and the value must lie in the knob's range; otherwise it is ignored, with a
// warning naming `what`.
template <typename T, typename Parse>
void ReadNumber(const Knob& k, const char* what, Parse parse, T* out, std::vector<std::string>* warnings) {
  const char* v = std::getenv(k.name);
  if (!v || !*v) return;
  errno = 0;
  char* end = nullptr;
  const auto x = parse(v, &end);
  using X = std::remove_const_t<decltype(x)>;
  if (errno || *end || !(x >= X(k.lo) && x <= X(k.hi))) {  // a NaN fails the range test too
    warnings->push_back(std::string(k.name) + "='" + v + "' ignored: expected " + what + " in [" +
                        Number(k.lo) + ", " + Number(k.hi) + "]");
    return;
  }
  *out = T(x);
}

void ReadInto(const Knob& k, uint32_t* out, std::vector<std::string>* warnings) {
  ReadNumber(k, "an integer", [](const char* v, char** end) { return std::strtoull(v, end, 10); }, out,
             warnings);
}
void ReadInto(const Knob& k, double* out, std::vector<std::string>* warnings) {
  ReadNumber(k, "a number", [](const char* v, char** end) { return std::strtod(v, end); }, out, warnings);
}
void ReadInto(const Knob& k, std::string* out, std::vector<std::string>*) {
  if (const char* v = std::getenv(k.name); v && *v) *out = v;
}
void ReadInto(const Knob& k, std::optional<Rotation>* out, std::vector<std::string>* warnings) {
  const char* v = std::getenv(k.name);
  if (!v || !*v) return;
  const auto r = ParseRotation(v);
  if (r && *r != Rotation::kDefault) {
    *out = *r;
    return;
  }
  std::string values = k.type;  // "none|hadamard": "none or hadamard"
  size_t bar = 0;
  while ((bar = values.find('|')) != std::string::npos) values.replace(bar, 1, " or ");
  warnings->push_back(std::string(k.name) + "='" + v + "' ignored: expected " + values);
}

std::optional<uint64_t> OptionValue(uint32_t v) { return v; }
std::optional<uint64_t> OptionValue(double) { return std::nullopt; }
std::optional<uint64_t> OptionValue(const std::string&) { return std::nullopt; }
std::optional<uint64_t> OptionValue(const std::optional<Rotation>& v) {
  if (!v) return std::nullopt;
  return uint64_t(*v);
}

// The default as the tables show it: a number or a word as itself.
std::string DefaultText(uint32_t v) { return Number(v); }
std::string DefaultText(double v) { return Number(v); }
std::string DefaultText(const std::string& v) { return v; }
std::string DefaultText(const std::optional<Rotation>&) { return ""; }

template <typename T>
Knob Row(const char* name, const T& def, double lo, double hi, const char* type, std::string default_text,
         std::string doc, void (*read)(const Knob&, Settings*),
         std::optional<uint64_t> (*option_value)(const Settings&)) {
  if (default_text.empty()) default_text = DefaultText(def);
  if (const size_t i = doc.find("{range}"); i != std::string::npos)
    doc.replace(i, 7, Number(lo) + ".." + Number(hi));
  return Knob{name, type, default_text, doc, lo, hi, read, option_value};
}

}  // namespace

const std::vector<Knob>& Knobs() {
  static const std::vector<Knob> kKnobs = [] {
    const Settings defaults;
    std::vector<Knob> knobs;
#define EQUARX_KNOB_ROW(field, Type, name, def, lo, hi, type, default_text, doc)                  \
  knobs.push_back(Row(                                                                           \
      name, defaults.field, double(lo), double(hi), type, default_text, doc,                     \
      [](const Knob& k, Settings* s) { ReadInto(k, &s->field, &s->warnings); },                  \
      [](const Settings& s) { return OptionValue(s.field); }));
    EQUARX_ENV_KNOBS(EQUARX_KNOB_ROW)
#undef EQUARX_KNOB_ROW
    return knobs;
  }();
  return kKnobs;
}

const Knob* FindKnob(std::string_view name) {
  for (const Knob& k : Knobs())
    if (k.name == name) return &k;
  return nullptr;
}

Settings Read() {
  Settings s;
  for (const Knob& k : Knobs()) k.read(k, &s);
  return s;
}

}  // namespace equarx::env
