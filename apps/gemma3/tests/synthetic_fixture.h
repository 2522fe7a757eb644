// synthetic_fixture.h — the tests' fixture over the synthetic model (synthetic.h): written
// once per test suite, 4 layers (0, 1, 3 local with a window of 5 positions, 2 global); a suite
// may write its own variant (SetUpWith).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gguf.h"
#include "model.h"
#include "runner.h"
#include "synthetic.h"

namespace gemma3 {

class SyntheticModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { SetUpWith(Spec()); }
  static testing::SyntheticSpec Spec() {
    testing::SyntheticSpec spec;
    spec.layers = 4;  // layers 0,1,3 local (window 5), layer 2 global
    return spec;
  }
  static void SetUpWith(const testing::SyntheticSpec& spec) {
    path_ = new std::string(::testing::TempDir() + "/gemma3_synth_" + std::to_string(::getpid()) + ".gguf");
    ASSERT_EQ(testing::WriteSyntheticModel(*path_, spec).ToString(), "ok");
    file_ = new GgufFile;
    ASSERT_EQ(file_->Open(*path_).ToString(), "ok");
    config_ = new Config;
    ASSERT_EQ(config_->Read(*file_).ToString(), "ok");
  }
  static void TearDownTestSuite() {
    std::remove(path_->c_str());
    delete config_;
    delete file_;
    delete path_;
  }
  static std::vector<int32_t> Tokens(size_t n) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 37 + 5) % config_->vocab);
    return t;
  }
  static std::vector<float> Run(int tp, const ReduceConfig& rc, const std::vector<int32_t>& tokens,
                                RunStats* st) {
    InProcessRunner run;
    EXPECT_EQ(run.Load(*file_, *config_, tp).ToString(), "ok");
    std::vector<float> h;
    EXPECT_EQ(run.Forward(tokens, rc, &h, st).ToString(), "ok");
    return h;
  }
  // The unquantized single-rank run: what the TP-N runs are compared with.
  static std::vector<float> SingleRank(const std::vector<int32_t>& tokens) {
    RunStats st;
    ReduceConfig ring;
    ring.options.algorithm = equarx::Algorithm::kRing;
    return Run(1, ring, tokens, &st);
  }
  static inline std::string* path_;
  static inline GgufFile* file_;
  static inline Config* config_;
};

}  // namespace gemma3
