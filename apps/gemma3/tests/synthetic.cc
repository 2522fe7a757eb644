// synthetic.cc — random but well-scaled weights: quantized blocks get random quant bits and a
// small positive half-precision scale, so that activations stay O(1) through the layers.
#include "synthetic.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "dequant.h"
#include "gguf.h"

namespace gemma3::testing {
namespace {

const char* const kPieces[] = {
    "<pad>", "<eos>", "<bos>", "<unk>", "\n", "\n\n", "a", "b", "c", "ab", "abc", "\xE2\x96\x81",
    "\xE2\x96\x81" "a", "\xE2\x96\x81" "ab", "the", "\xE2\x96\x81" "the", "h", "t", "e", "bc",
};
constexpr int kNumPieces = sizeof(kPieces) / sizeof(kPieces[0]);

std::vector<uint8_t> RandomBlocks(uint32_t type, size_t n, std::mt19937& rng, float scale) {
  size_t be, bb;
  GgmlTypeBlock(type, &be, &bb);
  std::vector<uint8_t> raw(n / be * bb);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  if (type == static_cast<uint32_t>(GgmlType::kF32)) {
    for (size_t i = 0; i < n; ++i) { float v = uni(rng) * scale; std::memcpy(&raw[4 * i], &v, 4); }
    return raw;
  }
  if (type == static_cast<uint32_t>(GgmlType::kF16) || type == static_cast<uint32_t>(GgmlType::kBF16)) {
    for (size_t i = 0; i < n; ++i) {
      float v = uni(rng) * scale;
      uint16_t h = type == static_cast<uint32_t>(GgmlType::kF16) ? FloatToHalf(v) : FloatToBFloat16(v);
      std::memcpy(&raw[2 * i], &h, 2);
    }
    return raw;
  }
  for (auto& b : raw) b = static_cast<uint8_t>(rng());
  // Overwrite the scale fields with sane values: the quantized units span about [-1, 1].
  for (size_t blk = 0; blk < raw.size() / bb; ++blk) {
    uint8_t* p = raw.data() + blk * bb;
    auto put_half = [&](size_t off, float v) { uint16_t h = FloatToHalf(v); std::memcpy(p + off, &h, 2); };
    switch (static_cast<GgmlType>(type)) {
      case GgmlType::kQ8_0: put_half(0, scale / 127.f); break;
      case GgmlType::kQ4_0: put_half(0, scale / 8.f); break;
      case GgmlType::kQ5_0: put_half(0, scale / 16.f); break;
      case GgmlType::kQ4_K: put_half(0, scale / 15.f / 63.f); put_half(2, scale / 63.f / 2.f); break;
      case GgmlType::kQ5_K: put_half(0, scale / 31.f / 63.f); put_half(2, scale / 63.f / 2.f); break;
      case GgmlType::kQ6_K: put_half(208, scale / 32.f / 127.f); break;
      default: break;
    }
  }
  return raw;
}

}  // namespace

const char* const* SyntheticPieces(int* n) {
  *n = kNumPieces + 256;
  return kPieces;
}

equarx::Status WriteSyntheticModel(const std::string& path, const SyntheticSpec& s) {
  std::mt19937 rng(s.seed);
  GgufWriter w;
  w.SetString("general.architecture", "gemma3");
  w.SetU32("general.alignment", 32);
  w.SetU32("gemma3.embedding_length", s.d_model);
  w.SetU32("gemma3.block_count", s.layers);
  w.SetU32("gemma3.feed_forward_length", s.d_ff);
  w.SetU32("gemma3.attention.head_count", s.heads);
  w.SetU32("gemma3.attention.head_count_kv", s.kv_heads);
  w.SetU32("gemma3.attention.key_length", s.head_dim);
  w.SetU32("gemma3.attention.value_length", s.head_dim);
  w.SetF32("gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
  w.SetF32("gemma3.rope.freq_base", 1e6f);
  w.SetU32("gemma3.attention.sliding_window", s.window);
  w.SetU32("gemma3.attention.sliding_window_pattern", s.swa_pattern);
  // Vocabulary: the named pieces, then 256 byte pieces.
  std::vector<std::string> pieces(kPieces, kPieces + kNumPieces);
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int i = 0; i < kNumPieces; ++i) {
    types.push_back(i < 4 ? 3 : (i < 6 ? 4 : 1));
    scores.push_back(i < 6 ? 0.f : -static_cast<float>(i));  // earlier pieces merge first
  }
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    pieces.push_back(buf);
    scores.push_back(0.f);
    types.push_back(6);
  }
  w.SetStringArray("tokenizer.ggml.tokens", pieces);
  w.SetF32Array("tokenizer.ggml.scores", scores);
  w.SetI32Array("tokenizer.ggml.token_type", types);
  w.SetString("tokenizer.ggml.model", "llama");
  w.SetU32("tokenizer.ggml.bos_token_id", 2);
  w.SetU32("tokenizer.ggml.unknown_token_id", 3);
  w.SetBool("tokenizer.ggml.add_bos_token", true);
  const uint64_t vocab = pieces.size(), d = s.d_model, q = s.heads * s.head_dim,
                 kv = s.kv_heads * s.head_dim, ff = s.d_ff, hd = s.head_dim;
  using T = GgmlType;
  auto t = [](T x) { return static_cast<uint32_t>(x); };
  auto add = [&](const std::string& name, std::vector<uint64_t> dims, T type, float scale) {
    uint64_t n = 1;
    for (auto x : dims) n *= x;
    w.AddTensor(name, dims, t(type), RandomBlocks(t(type), n, rng, scale));
  };
  auto add_norm = [&](const std::string& name, uint64_t n) {
    std::vector<uint8_t> raw(n * 4);
    std::uniform_real_distribution<float> u(0.8f, 1.2f);
    for (uint64_t i = 0; i < n; ++i) { float v = u(rng); std::memcpy(&raw[4 * i], &v, 4); }
    w.AddTensor(name, {n}, t(T::kF32), raw);
  };
  add("token_embd.weight", {d, vocab}, T::kQ8_0, 1.0f);
  add_norm("output_norm.weight", d);
  if (s.untied_output) add("output.weight", {d, vocab}, T::kQ8_0, 1.0f);
  // Rotate the matrix types over layers so every decoder appears in a forward pass.
  const T in_types[] = {T::kQ5_0, T::kQ8_0, T::kQ4_0, T::kF16, T::kBF16, T::kF32};
  const T wide_types[] = {T::kQ4_K, T::kQ6_K, T::kQ5_K};
  for (int l = 0; l < s.layers; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    T a = in_types[l % 6], b = in_types[(l + 1) % 6], c = in_types[(l + 2) % 6];
    float sc_in = 1.5f / std::sqrt(static_cast<float>(d));
    add_norm(p + "attn_norm.weight", d);
    add(p + "attn_q.weight", {d, q}, a, sc_in);
    add(p + "attn_k.weight", {d, kv}, b, sc_in);
    add(p + "attn_v.weight", {d, kv}, c, sc_in);
    add_norm(p + "attn_q_norm.weight", hd);
    add_norm(p + "attn_k_norm.weight", hd);
    add(p + "attn_output.weight", {q, d}, wide_types[l % 3], 1.5f / std::sqrt(static_cast<float>(q)));
    add_norm(p + "post_attention_norm.weight", d);
    add_norm(p + "ffn_norm.weight", d);
    add(p + "ffn_gate.weight", {d, ff}, b, sc_in);
    add(p + "ffn_up.weight", {d, ff}, c, sc_in);
    add(p + "ffn_down.weight", {ff, d}, wide_types[(l + 1) % 3], 1.5f / std::sqrt(static_cast<float>(ff)));
    add_norm(p + "post_ffw_norm.weight", d);
  }
  return w.Write(path);
}

}  // namespace gemma3::testing
