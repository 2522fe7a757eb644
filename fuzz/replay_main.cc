// The main of a fuzz harness in builds without libFuzzer (gcc, the release preset): runs
// LLVMFuzzerTestOneInput once on every file named on the command line (directories: every
// file in them), as `harness FILE...` does under libFuzzer. CTest uses it to replay the seed
// corpus and every regression input (fuzz/CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  size_t runs = 0;
  auto run = [&](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "cannot read %s\n", p.c_str());
      return false;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    // A copy of exactly the file's size on the heap, as libFuzzer passes it.
    std::vector<uint8_t> data(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
    ++runs;
    return true;
  };
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    if (!p.empty() && p.native()[0] == '-') continue;  // libFuzzer flags: ignored here
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && !run(e.path())) return 1;
    } else if (!run(p)) {
      return 1;
    }
  }
  std::printf("replayed %zu inputs\n", runs);
  return 0;
}
