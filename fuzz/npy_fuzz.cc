// Fuzz harness: the .npy reader (tools/common/npy.h) on arbitrary bytes. Beyond "no crash, no
// sanitizer report, no unbounded allocation": an accepted array holds exactly count()
// elements of its dtype, and writing it and reading it back gives the same array.
#include <cstdint>
#include <vector>

#include "fuzz_input.h"
#include "npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace equarx;
  tools::NpyArray a;
  if (!tools::ParseNpy(data, size, "fuzz.npy", &a).ok()) return 0;
  const size_t n = a.count();
  const bool f32 = a.dtype == tools::NpyDType::kFloat32;
  if ((f32 ? a.f32.size() : a.f16.size()) != n || (f32 ? a.f16.size() : a.f32.size()) != 0)
    fuzz::Fail("accepted array's element vector does not match its shape");
  std::vector<uint8_t> image;
  if (!tools::SerializeNpy(a, &image).ok()) fuzz::Fail("an accepted array cannot be written");
  tools::NpyArray b;
  if (!tools::ParseNpy(image.data(), image.size(), "round trip", &b).ok()) fuzz::Fail("written array not readable");
  if (b.dtype != a.dtype || b.shape != a.shape || b.f16 != a.f16 ||
      (f32 && n && std::memcmp(a.f32.data(), b.f32.data(), n * 4) != 0))
    fuzz::Fail("round trip changed the array");
  return 0;
}
