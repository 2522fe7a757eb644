// equarx-info: what this build of equarx is — version, SIMD targets, every AllReduce option of
// the library's option table (values, default, environment variable) and every EQUARX_*
// environment knob with its default and current value. With --markdown it prints the two
// tables of docs/configuration.md instead (scripts/config_tables.sh splices them there, and a
// test fails when the doc's differ). Takes no other arguments (--help prints this).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "equarx/equarx.hpp"

namespace {

std::string Values(const equarx::OptionField& f, const char* sep) {
  std::string values;
  if (f.kind == equarx::OptionKind::kEnum) {
    for (size_t k = 0; k < f.num_values; ++k) values.append(k ? sep : "").append(f.values[k].name);
  } else if (f.kind == equarx::OptionKind::kBool) {
    values = std::string("0") + sep + "1";
  } else {
    values = std::to_string(f.min) + ".." + std::to_string(f.max);
  }
  return values;
}

// The option table and the knob table as docs/configuration.md shows them.
void PrintMarkdown() {
  using namespace equarx;
  const AllReduceOptions defaults;
  size_t n = 0;
  const OptionField* f = OptionFields(&n);
  std::printf("<!-- generated:options:begin -->\n| option | alias | values | default | environment | meaning |\n"
              "|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < n; ++i) {
    auto code = [](std::string_view s) { return s.empty() ? std::string("") : "`" + std::string(s) + "`"; };
    std::printf("| `%.*s` | %s | %s | `%s` | %s | %.*s |\n", int(f[i].name.size()), f[i].name.data(),
                code(f[i].alias).c_str(), Values(f[i], ", ").c_str(),
                FormatOptionValue(f[i], f[i].get(defaults)).c_str(), code(f[i].env).c_str(),
                int(f[i].doc.size()), f[i].doc.data());
  }
  std::printf("<!-- generated:options:end -->\n\n<!-- generated:knobs:begin -->\n"
              "| variable | type | default | meaning |\n|---|---|---|---|\n");
  for (const EnvKnob& k : EnvKnobs())
    std::printf("| `%s` | %s | %s | %s |\n", k.name.c_str(), k.type.c_str(), k.default_value.c_str(), k.doc.c_str());
  std::printf("<!-- generated:knobs:end -->\n");
}

void PrintTable(const char* title, const equarx::EnumInfo* t, size_t n) {
  std::printf("%s:\n", title);
  for (size_t i = 0; i < n; ++i)
    std::printf("  %-11.*s %.*s\n", int(t[i].name.size()), t[i].name.data(),
                int(t[i].description.size()), t[i].description.data());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace equarx;
  if (argc > 2) {
    std::fprintf(stderr, "equarx-info: takes at most one argument (--markdown; --help)\n");
    return 2;
  }
  if (argc > 1) {
    const std::string a = argv[1];
    if (a == "--help" || a == "-h") {
      std::printf("usage: equarx-info [--markdown]\nprints the version, the SIMD targets, every AllReduce option and "
                  "every EQUARX_* variable; --markdown: the option and variable tables of "
                  "docs/configuration.md\n");
      return 0;
    }
    if (a == "--markdown") {
      PrintMarkdown();
      return 0;
    }
    std::fprintf(stderr, "equarx-info: unknown argument '%s' (--markdown; --help)\n", a.c_str());
    return 2;
  }
  std::printf("equarx %s\n", EQUARX_VERSION);
  std::printf("SIMD targets (best first):");
  for (const std::string& t : SimdTargets()) std::printf(" %s", t.c_str());
  std::printf("\nkernels use: %s\n\n", ActiveSimdTarget().c_str());
  size_t n;
  const EnumInfo* t = AlgorithmTable(&n);
  PrintTable("algorithms", t, n);
  t = PhasesTable(&n);
  PrintTable("phases", t, n);
  t = CodecTable(&n);
  PrintTable("codecs", t, n);
  std::printf("\noptions (AllReduceOptions; text key=value, tool flag --key, Python keyword):\n");
  const AllReduceOptions defaults;
  const OptionField* f = OptionFields(&n);
  for (size_t i = 0; i < n; ++i) {
    const std::string values = Values(f[i], "|");
    std::printf("  %-18.*s %-34s default %-10s %-19.*s %.*s\n", int(f[i].name.size()), f[i].name.data(),
                values.c_str(), FormatOptionValue(f[i], f[i].get(defaults)).c_str(),
                int(f[i].env.size()), f[i].env.data(), int(f[i].doc.size()), f[i].doc.data());
  }
  std::printf("\nenvironment (option > variable > default):\n");
  for (const EnvKnob& k : EnvKnobs()) {
    std::printf("  %-20s %-5s default %-8s now %-8s %s\n", k.name.c_str(), k.type.c_str(),
                k.default_value.c_str(), k.set ? k.value.c_str() : "(unset)", k.doc.c_str());
  }
  for (const std::string& w : EnvWarnings()) std::printf("warning: %s\n", w.c_str());
  return 0;
}
