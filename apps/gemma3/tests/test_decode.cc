// test_decode.cc — the KV cache on the synthetic model, against the independent oracle of
// recomputing: a sequence run in pieces (prefill, single tokens, a chunk) gives bitwise the
// rows of one full-sequence forward pass (RankModel::Forward, one step from an empty cache),
// across query blocks, key panels and the sliding window.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model.h"
#include "synthetic_fixture.h"

namespace gemma3 {
namespace {

using SyntheticDecode = SyntheticModel;

TEST_F(SyntheticDecode, StepsInPiecesMatchOneForwardBitwise) {
  RankModel m;
  std::string err;
  ASSERT_TRUE(m.Load(*file_, *config_, 0, 1, &err)) << err;
  const auto tokens = Tokens(70);  // two query blocks of 48, five key panels, window 5
  const size_t d = config_->d_model;
  std::vector<float> whole(tokens.size() * d);
  const Reducer none = [](float*, size_t) { return true; };
  ASSERT_TRUE(m.Forward(tokens.data(), tokens.size(), none, 2, whole.data(), nullptr));
  KvCache cache;
  m.InitCache(tokens.size(), &cache);
  Workspace ws;
  size_t pos = 0;
  for (size_t piece : {49, 1, 1, 17, 2}) {
    std::vector<float> out(piece * d);
    ASSERT_TRUE(m.Step(tokens.data() + pos, piece, &cache, &ws, none, 2, out.data(), nullptr));
    EXPECT_EQ(0, std::memcmp(out.data(), whole.data() + pos * d, out.size() * sizeof(float)))
        << "positions " << pos << ".." << pos + piece - 1;
    pos += piece;
  }
  EXPECT_EQ(cache.length, tokens.size());
  std::vector<float> out(d);
  EXPECT_FALSE(m.Step(tokens.data(), 1, &cache, &ws, none, 2, out.data(), nullptr)) << "cache is full";
}

}  // namespace
}  // namespace gemma3
