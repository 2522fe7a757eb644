// Fuzz harness: tune-table files (src/algo/tune_table.h), the text EQUARX_TUNE_FILE points
// at. Beyond "no crash": an accepted table prints (ToText) to text that parses to the same
// table (equal Hash), and every lookup returns a rule of a known algorithm.
#include <cstdint>
#include <string>

#include "algo/tune_table.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace equarx;
  const std::string text(reinterpret_cast<const char*>(data), size);
  algo::TuneTable t;
  if (!algo::TuneTable::Parse(text, &t).ok()) return 0;
  algo::TuneTable u;
  const std::string printed = t.ToText();
  if (!algo::TuneTable::Parse(printed, &u).ok()) fuzz::Fail("ToText of an accepted table does not parse");
  if (u.Hash() != t.Hash() || u.ToText() != printed) fuzz::Fail("table changed in a text round trip");
  for (int ranks : {1, 2, 3, 8, 4096})
    for (DType d : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
      for (size_t bytes : {size_t(0), size_t(1), size_t(1) << 20, ~size_t(0)}) {
        const algo::TuneRule r = t.Lookup(ranks, d, bytes);
        if (AlgorithmName(r.algorithm) == "unknown" || PhasesName(r.phases) == "unknown") fuzz::Fail("lookup returned an unknown algorithm");
      }
  return 0;
}
