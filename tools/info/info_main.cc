// equarx-info: what this build of equarx is — version, SIMD targets, every AllReduce option of
// the library's option table (values, default, environment variable) and every EQUARX_*
// environment knob with its default and current value. Takes no arguments (--help prints
// this), rejects any other.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "equarx/equarx.hpp"

namespace {

void PrintTable(const char* title, const equarx::EnumInfo* t, size_t n) {
  std::printf("%s:\n", title);
  for (size_t i = 0; i < n; ++i)
    std::printf("  %-11.*s %.*s\n", int(t[i].name.size()), t[i].name.data(),
                int(t[i].description.size()), t[i].description.data());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace equarx;
  if (argc > 1) {
    const std::string a = argv[1];
    if (a == "--help" || a == "-h") {
      std::printf("usage: equarx-info\nprints the version, the SIMD targets, every AllReduce option and "
                  "every EQUARX_* variable\n");
      return 0;
    }
    std::fprintf(stderr, "equarx-info: unknown argument '%s' (it takes none; --help)\n", a.c_str());
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
    std::string values;
    if (f[i].kind == OptionKind::kEnum) {
      for (size_t k = 0; k < f[i].num_values; ++k)
        values.append(k ? "|" : "").append(f[i].values[k].name);
    } else if (f[i].kind == OptionKind::kBool) {
      values = "0|1";
    } else {
      values = std::to_string(f[i].min) + ".." + std::to_string(f[i].max);
    }
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
