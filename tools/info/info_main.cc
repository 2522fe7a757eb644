// equarx-info: what this build of equarx is — version, SIMD targets, algorithms, phases,
// codecs and every EQUARX_* environment knob with its default and current value.
#include <cstdio>
#include <cstdlib>

#include "codec/codec.h"
#include "common/env.h"
#include "equarx/equarx.hpp"

namespace {

void PrintTable(const char* title, const equarx::EnumInfo* t, size_t n) {
  std::printf("%s:\n", title);
  for (size_t i = 0; i < n; ++i)
    std::printf("  %-11.*s %.*s\n", int(t[i].name.size()), t[i].name.data(),
                int(t[i].description.size()), t[i].description.data());
}

}  // namespace

int main() {
  using namespace equarx;
  std::printf("equarx %s\n", EQUARX_VERSION);
  std::printf("SIMD targets (best first):");
  for (int64_t t : codec::AvailableTargets()) std::printf(" %s", codec::TargetName(t).c_str());
  std::printf("\nkernels use: %s\n\n", codec::TargetName(codec::CurrentTarget()).c_str());
  size_t n;
  const EnumInfo* t = AlgorithmTable(&n);
  PrintTable("algorithms", t, n);
  t = PhasesTable(&n);
  PrintTable("phases", t, n);
  t = CodecTable(&n);
  PrintTable("codecs", t, n);
  std::printf("\nenvironment (option > variable > default):\n");
  for (const env::Knob& k : env::Knobs()) {
    const char* v = std::getenv(k.name);
    std::printf("  %-20s %-5s default %-8s now %-8s %s\n", k.name, k.type, k.default_value,
                v ? v : "(unset)", k.doc);
  }
  for (const std::string& w : env::Read().warnings) std::printf("warning: %s\n", w.c_str());
  return 0;
}
