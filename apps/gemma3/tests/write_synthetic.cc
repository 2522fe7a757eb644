// gemma3_write_synthetic PATH [SEED [untied]] — writes the tests' tiny random Gemma 3 GGUF to
// PATH, for tests that run the equarx-gemma3 executable itself (run_mpi_bench_test.sh,
// run_generate_test.sh); `untied` gives it its own output projection (SyntheticSpec).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "synthetic.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4 || (argc == 4 && std::string(argv[3]) != "untied")) {
    std::fprintf(stderr, "usage: gemma3_write_synthetic PATH [SEED [untied]]\n");
    return 2;
  }
  gemma3::testing::SyntheticSpec spec;
  if (argc >= 3) spec.seed = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  spec.untied_output = argc == 4;
  if (const equarx::Status st = gemma3::testing::WriteSyntheticModel(argv[1], spec); !st.ok()) {
    std::fprintf(stderr, "gemma3_write_synthetic: %s\n", st.message().c_str());
    return 1;
  }
  return 0;
}
