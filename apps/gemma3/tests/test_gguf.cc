// test_gguf.cc — GGUF round trip through the writer and reader, the dequantizers on blocks
// built by hand (expected values computed here from the format description), the half and
// bfloat16 conversions, and the tokenizer on the synthetic vocabulary.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "dequant.h"
#include "gguf.h"
#include "synthetic.h"
#include "tokenizer.h"

namespace gemma3 {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/gemma3_" + name + "_" + std::to_string(::getpid()) + ".gguf";
}

void PutHalf(std::vector<uint8_t>& b, size_t off, float v) {
  uint16_t h = FloatToHalf(v);
  std::memcpy(&b[off], &h, 2);
}

TEST(Gguf, RoundTripMetadataAndTensors) {
  GgufWriter w;
  w.SetString("general.architecture", "gemma3");
  w.SetU32("x.u32", 123456);
  w.SetF32("x.f32", 0.25f);
  w.SetBool("x.bool", true);
  w.SetStringArray("x.strs", {"a", "", "\xE2\x96\x81" "b"});
  w.SetI32Array("x.ints", {-1, 7});
  std::vector<float> f32 = {1.5f, -2.f, 3.25f, 0.f};
  std::vector<uint8_t> raw(16);
  std::memcpy(raw.data(), f32.data(), 16);
  w.AddTensor("t.f32", {2, 2}, static_cast<uint32_t>(GgmlType::kF32), raw);
  std::vector<uint8_t> h(8);
  for (int i = 0; i < 4; ++i) {
    uint16_t v = FloatToHalf(f32[i]);
    std::memcpy(&h[2 * i], &v, 2);
  }
  w.AddTensor("t.f16", {4}, static_cast<uint32_t>(GgmlType::kF16), h);
  std::string path = TempPath("roundtrip");
  ASSERT_EQ(w.Write(path).ToString(), "ok");
  GgufFile f;
  ASSERT_EQ(f.Open(path).ToString(), "ok");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.GetString("general.architecture", ""), "gemma3");
  EXPECT_EQ(f.GetInt("x.u32", 0), 123456);
  EXPECT_EQ(f.GetFloat("x.f32", 0), 0.25);
  EXPECT_EQ(f.GetInt("x.bool", 0), 1);
  ASSERT_NE(f.Find("x.strs"), nullptr);
  ASSERT_EQ(f.Find("x.strs")->arr.size(), 3u);
  EXPECT_EQ(f.Find("x.strs")->arr[2].s, "\xE2\x96\x81" "b");
  EXPECT_EQ(f.Find("x.ints")->arr[0].AsInt(), -1);
  const GgufTensor* t = f.Tensor("t.f32");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims, (std::vector<uint64_t>{2, 2}));
  std::vector<float> back(4);
  ASSERT_TRUE(Dequantize(t->type, t->data, 4, back.data()));
  EXPECT_EQ(back, f32);
  t = f.Tensor("t.f16");
  ASSERT_TRUE(Dequantize(t->type, t->data, 4, back.data()));
  EXPECT_EQ(back, f32);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 32, 0u);
  std::remove(path.c_str());
}

TEST(Gguf, RejectsGarbage) {
  std::string path = TempPath("garbage");
  FILE* fp = std::fopen(path.c_str(), "wb");
  std::fputs("GGUF\x03\0\0\0 this is not a model at all......", fp);
  std::fclose(fp);
  GgufFile f;
  const equarx::Status st = f.Open(path);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(st.message().empty());
  std::remove(path.c_str());
}

TEST(Dequant, HalfAndBf16Conversions) {
  for (float v : {0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, -1.5258789e-05f})
    EXPECT_EQ(HalfToFloat(FloatToHalf(v)), v) << v;  // representable: exact
  EXPECT_NEAR(HalfToFloat(FloatToHalf(0.333333f)), 0.333333f, 0.333333f / 2048);
  EXPECT_EQ(HalfToFloat(0x3C01), 1.0f + 1.0f / 1024);
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(70000.f))));
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.00390625f)), 1.0f);  // tie to even
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(-3.f)), -3.f);
}

TEST(Dequant, Q8_0AndQ4_0AndQ5_0) {
  std::vector<uint8_t> b(34);
  PutHalf(b, 0, 0.5f);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  std::vector<float> y(32);
  ASSERT_TRUE(Dequantize(static_cast<uint32_t>(GgmlType::kQ8_0), b.data(), 32, y.data()));
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.5f * (j - 16));

  std::vector<uint8_t> q4(18);
  PutHalf(q4, 0, 2.f);
  for (int j = 0; j < 16; ++j) q4[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  ASSERT_TRUE(Dequantize(static_cast<uint32_t>(GgmlType::kQ4_0), q4.data(), 32, y.data()));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.f * (j - 8));
    EXPECT_EQ(y[j + 16], 2.f * (15 - j - 8));
  }

  std::vector<uint8_t> q5(22);
  PutHalf(q5, 0, 1.f);
  uint32_t qh = 0xA5A5F00Fu;
  std::memcpy(&q5[2], &qh, 4);
  for (int j = 0; j < 16; ++j) q5[6 + j] = static_cast<uint8_t>(j | (j << 4));
  ASSERT_TRUE(Dequantize(static_cast<uint32_t>(GgmlType::kQ5_0), q5.data(), 32, y.data()));
  for (int j = 0; j < 32; ++j) {
    int v = (j % 16) | (((qh >> j) & 1) << 4);
    EXPECT_EQ(y[j], static_cast<float>(v - 16)) << j;
  }
}

// Q4_K/Q5_K: every sub-block gets its own scale/min so the 6-bit packing is exercised.
TEST(Dequant, Q4_KAndQ5_K) {
  uint8_t sc[8] = {1, 2, 63, 4, 33, 17, 9, 60}, mn[8] = {5, 0, 7, 63, 2, 41, 3, 1};
  std::vector<uint8_t> packed(12, 0);
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
  }
  std::vector<uint8_t> b(144);
  PutHalf(b, 0, 0.25f);
  PutHalf(b, 2, 0.5f);
  std::memcpy(&b[4], packed.data(), 12);
  for (int i = 0; i < 128; ++i) b[16 + i] = static_cast<uint8_t>(i * 37 + 11);
  std::vector<float> y(256);
  ASSERT_TRUE(Dequantize(static_cast<uint32_t>(GgmlType::kQ4_K), b.data(), 256, y.data()));
  for (int i = 0; i < 256; ++i) {
    int sub = i / 32, chunk = i / 64, l = i % 32;
    uint8_t byte = b[16 + chunk * 32 + l];
    int q = (sub % 2 == 0) ? (byte & 0xF) : (byte >> 4);
    EXPECT_EQ(y[i], 0.25f * sc[sub] * q - 0.5f * mn[sub]) << i;
  }
  std::vector<uint8_t> b5(176);
  PutHalf(b5, 0, 0.25f);
  PutHalf(b5, 2, 0.5f);
  std::memcpy(&b5[4], packed.data(), 12);
  for (int i = 0; i < 32; ++i) b5[16 + i] = static_cast<uint8_t>(i * 73 + 5);
  for (int i = 0; i < 128; ++i) b5[48 + i] = static_cast<uint8_t>(i * 37 + 11);
  ASSERT_TRUE(Dequantize(static_cast<uint32_t>(GgmlType::kQ5_K), b5.data(), 256, y.data()));
  for (int i = 0; i < 256; ++i) {
    int sub = i / 32, chunk = i / 64, l = i % 32;
    uint8_t byte = b5[48 + chunk * 32 + l];
    int q = ((sub % 2 == 0) ? (byte & 0xF) : (byte >> 4)) + (((b5[16 + l] >> sub) & 1) << 4);
    EXPECT_EQ(y[i], 0.25f * sc[sub] * q - 0.5f * mn[sub]) << i;
  }
}

TEST(Dequant, Q6_K) {
  std::vector<uint8_t> b(210);
  for (int i = 0; i < 128; ++i) b[i] = static_cast<uint8_t>(i * 29 + 3);
  for (int i = 0; i < 64; ++i) b[128 + i] = static_cast<uint8_t>(i * 53 + 7);
  for (int i = 0; i < 16; ++i) b[192 + i] = static_cast<uint8_t>(static_cast<int8_t>(i * 9 - 70));
  PutHalf(b, 208, 0.125f);
  std::vector<float> y(256);
  ASSERT_TRUE(Dequantize(static_cast<uint32_t>(GgmlType::kQ6_K), b.data(), 256, y.data()));
  for (int i = 0; i < 256; ++i) {
    // Value i: half h, quarter k (32 values each) of the 128-value half, lane l.
    int h = i / 128, k = (i % 128) / 32, l = i % 32;
    uint8_t lo_byte = b[h * 64 + l + (k % 2) * 32];
    int lo = k < 2 ? (lo_byte & 0xF) : (lo_byte >> 4);
    int hi = (b[128 + h * 32 + l] >> (2 * k)) & 3;
    int scale = static_cast<int8_t>(b[192 + h * 8 + k * 2 + l / 16]);
    EXPECT_EQ(y[i], 0.125f * scale * ((lo | (hi << 4)) - 32)) << i;
  }
}

TEST(Tokenizer, SyntheticVocabulary) {
  std::string path = TempPath("tok");
  testing::SyntheticSpec spec;
  spec.layers = 1;
  ASSERT_EQ(testing::WriteSyntheticModel(path, spec).ToString(), "ok");
  GgufFile f;
  ASSERT_EQ(f.Open(path).ToString(), "ok");
  Tokenizer tok;
  ASSERT_EQ(tok.Load(f).ToString(), "ok");
  int n;
  testing::SyntheticPieces(&n);
  const int byte0 = n - 256;
  // " abc": ab (score -9) beats ▁a (-12), then abc (-10) beats ▁ab (-13); "▁abc" is no piece.
  EXPECT_EQ(tok.Encode(" abc"), (std::vector<int32_t>{2, 11, 10}));
  // "the" cannot be reached (no "th"/"he" piece); "\n\n" is user-defined (longest match);
  // "x" falls back to its byte.
  EXPECT_EQ(tok.Encode("the\n\nx", false), (std::vector<int32_t>{17, 16, 18, 5, byte0 + 'x'}));
  EXPECT_EQ(tok.Decode(tok.Encode(" abc the\n\nx\xC3\xA9")), " abc the\n\nx\xC3\xA9");
  std::remove(path.c_str());
}


// Found by fuzz/tokenizer_fuzz.cc and fuzz/gguf_fuzz.cc (inputs in fuzz/regressions/): a
// vocabulary whose bos or unknown id lies outside it, or that can encode some byte neither by
// a <0xXX> piece nor by an unknown token, made Encode return ids outside the vocabulary (-1,
// or the bad id). Load now refuses such a file with a message naming the problem.
equarx::Status LoadVocabulary(const std::vector<std::string>& pieces, const std::vector<int32_t>& types,
                              int bos, int unk, Tokenizer* tok) {
  GgufWriter w;
  w.SetStringArray("tokenizer.ggml.tokens", pieces);
  w.SetI32Array("tokenizer.ggml.token_type", types);
  if (bos != -2) w.SetU32("tokenizer.ggml.bos_token_id", uint32_t(bos));
  if (unk != -2) w.SetU32("tokenizer.ggml.unknown_token_id", uint32_t(unk));
  std::vector<uint8_t> image;
  w.Serialize(&image);
  GgufFile f;
  EQUARX_RETURN_IF_ERROR(f.OpenBytes(image.data(), image.size()));
  return tok->Load(f);
}

TEST(Tokenizer, RejectsIdsOutsideTheVocabularyAndUnencodableBytes) {
  const std::vector<std::string> pieces = {"<unk>", "<bos>", "a", "<0x41>"};
  const std::vector<int32_t> types = {2, 3, 1, 6};
  Tokenizer tok;
  equarx::Status st = LoadVocabulary(pieces, types, 4, 0, &tok);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("bos token id 4 is outside the vocabulary of 4 pieces"), std::string::npos)
      << st.ToString();
  st = LoadVocabulary(pieces, types, 1, 7, &tok);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("unknown token id 7 is outside"), std::string::npos) << st.ToString();
  st = LoadVocabulary(pieces, types, 1, -2, &tok);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no <0x00> piece and no unknown token"), std::string::npos) << st.ToString();
  // With an unknown token every byte is encodable, and every id is in range.
  ASSERT_EQ(LoadVocabulary(pieces, types, 1, 0, &tok).ToString(), "ok");
  for (int32_t id : tok.Encode("aA\xff\xC3\xA9 z"))
    EXPECT_TRUE(id >= 0 && size_t(id) < tok.vocab_size()) << id;
}

// Seen while writing fuzz/gguf_fuzz.cc: a float metadata value read as an integer was converted
// without a range check (undefined behaviour for NaN or |f| >= 2^63).
TEST(Gguf, FloatMetadataOutsideInt64ReadsAsZero) {
  GgufValue v;
  v.kind = GgufValue::kFloat;
  for (double f : {1e300, -1e300, std::nan("")}) {
    v.f = f;
    EXPECT_EQ(v.AsInt(), 0) << f;
  }
  v.f = -3.7;
  EXPECT_EQ(v.AsInt(), -3);
}

// Found by fuzz/tokenizer_fuzz.cc in the CI run (fuzz/regressions/tokenizer/byte_piece_with_sign):
// a byte piece was parsed with sscanf's %2x, which takes a sign, so "<0x-4>" wrote
// byte_token_[-4] and "<0x+4>" became byte 4's piece. Only two hex digits make a byte piece.
TEST(Tokenizer, BytePiecesAreExactlyTwoHexDigits) {
  const std::vector<std::string> pieces = {"<unk>", "<bos>", "<0x+4>", "<0x-4>", "<0x41>", "<0x0a>"};
  const std::vector<int32_t> types = {2, 3, 6, 6, 6, 6};
  Tokenizer tok;
  ASSERT_EQ(LoadVocabulary(pieces, types, 1, 0, &tok).ToString(), "ok");
  const std::vector<int32_t> ids = tok.Encode("\x04" "A\n", false);
  auto has = [&](int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
  EXPECT_FALSE(has(2) || has(3));  // no piece for byte 4: it is unknown
  EXPECT_TRUE(has(0));
  EXPECT_TRUE(has(4) && has(5));  // upper and lower case hex digits
}

// Found by fuzz/gguf_fuzz.cc in the CI run (fuzz/regressions/gguf/element_count_wraps): a
// tensor's byte size (f32, dims 4 x (2^60 + 2): 2^64 + 32 bytes) wrapped around 2^64, so it was
// accepted with 32 bytes of data. The element count could wrap the same way. Both refused.
TEST(Gguf, TensorSizeThatOverflowsIsRefused) {
  for (const std::vector<uint64_t>& dims : {std::vector<uint64_t>{4, (uint64_t(1) << 60) + 2},
                                            std::vector<uint64_t>{4, uint64_t(1) << 62, 4}}) {
    GgufWriter w;
    w.AddTensor("t", dims, uint32_t(GgmlType::kF32), std::vector<uint8_t>(32));
    std::vector<uint8_t> image;
    w.Serialize(&image);
    GgufFile f;
    const equarx::Status st = f.OpenBytes(image.data(), image.size());
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("size overflows"), std::string::npos) << st.ToString();
  }
}

// Found by fuzz/gguf_fuzz.cc in the long run (fuzz/regressions/gguf/offset_wraps): a tensor
// offset near 2^64 made data_start + offset wrap around, so the range check passed and the
// tensor's data pointer lay before the image. Now "data outside the file".
TEST(Gguf, TensorOffsetThatWrapsIsRefused) {
  GgufWriter w;
  w.AddTensor("tensor_x", {8}, uint32_t(GgmlType::kF32), std::vector<uint8_t>(32));
  std::vector<uint8_t> image;
  w.Serialize(&image);
  const std::string name = "tensor_x";
  auto it = std::search(image.begin(), image.end(), name.begin(), name.end());
  ASSERT_NE(it, image.end());
  // name, then u32 n_dims (1), u64 dim, u32 type, u64 offset
  const size_t offset_at = size_t(it - image.begin()) + name.size() + 4 + 8 + 4;
  for (uint64_t off : {~uint64_t(0) - 15, ~uint64_t(0)}) {
    std::memcpy(image.data() + offset_at, &off, 8);
    GgufFile f;
    const equarx::Status st = f.OpenBytes(image.data(), image.size());
    EXPECT_FALSE(st.ok()) << off;
    EXPECT_NE(st.message().find("data outside the file"), std::string::npos) << st.ToString();
  }
  const uint64_t zero = 0;
  std::memcpy(image.data() + offset_at, &zero, 8);
  GgufFile f;
  EXPECT_EQ(f.OpenBytes(image.data(), image.size()).ToString(), "ok");
}

}  // namespace
}  // namespace gemma3
