// model.cc — loading a rank's shard from GGUF and the Gemma 3 prefill forward pass:
//   h = embed(tokens) * sqrt(d)
//   per layer: a = attn(rmsnorm(h)) -> SUM -> h += rmsnorm_post(a)
//              m = down(gelu_tanh(gate(x)) * up(x)), x = rmsnorm(h) -> SUM -> h += rmsnorm_post(m)
//   out = rmsnorm(h)
// Attention: per-head RMSNorm of q and k, NeoX RoPE (base 1e6 on global layers, 1e4 on local
// ones), q scaled by 1/sqrt(head_dim), causal mask plus a sliding window on local layers.
// GGUF norm weights already include Gemma's "+1" (llama.cpp's converter adds it), so
// RMSNorm here is x / rms(x) * w.
#include "model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "dequant.h"

namespace gemma3 {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Rows of n values, normalized in place (or into out) with weight w[n].
void RmsNorm(const float* x, size_t rows, size_t n, size_t ld, const float* w, float eps,
             float* out, size_t ldo) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ld;
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    float* o = out + r * ldo;
    for (size_t i = 0; i < n; ++i) o[i] = xr[i] * inv * w[i];
  }
}

void Rope(float* x, size_t rows, size_t ld, size_t heads, size_t hd, double base) {
  size_t half = hd / 2;
  std::vector<float> cs(half), sn(half);
  for (size_t t = 0; t < rows; ++t) {
    for (size_t i = 0; i < half; ++i) {
      double theta = static_cast<double>(t) * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
      cs[i] = static_cast<float>(std::cos(theta));
      sn[i] = static_cast<float>(std::sin(theta));
    }
    for (size_t h = 0; h < heads; ++h) {
      float* v = x + t * ld + h * hd;
      for (size_t i = 0; i < half; ++i) {
        float a = v[i], b = v[i + half];
        v[i] = a * cs[i] - b * sn[i];
        v[i + half] = a * sn[i] + b * cs[i];
      }
    }
  }
}

float GeluTanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

}  // namespace

bool Config::Read(const GgufFile& f, std::string* error) {
  arch = f.GetString("general.architecture", "");
  if (arch != "gemma3") { *error = "not a gemma3 model (architecture '" + arch + "')"; return false; }
  auto key = [&](const char* k) { return arch + "." + k; };
  d_model = static_cast<int>(f.GetInt(key("embedding_length"), 0));
  n_layers = static_cast<int>(f.GetInt(key("block_count"), 0));
  d_ff = static_cast<int>(f.GetInt(key("feed_forward_length"), 0));
  n_heads = static_cast<int>(f.GetInt(key("attention.head_count"), 0));
  n_kv_heads = static_cast<int>(f.GetInt(key("attention.head_count_kv"), n_heads));
  head_dim = static_cast<int>(f.GetInt(key("attention.key_length"), n_heads ? d_model / n_heads : 0));
  int vdim = static_cast<int>(f.GetInt(key("attention.value_length"), head_dim));
  eps = static_cast<float>(f.GetFloat(key("attention.layer_norm_rms_epsilon"), 1e-6));
  rope_base_global = static_cast<float>(f.GetFloat(key("rope.freq_base"), 1e6));
  rope_base_local = static_cast<float>(f.GetFloat(key("rope.freq_base_swa"), 1e4));
  sliding_window = static_cast<int>(f.GetInt(key("attention.sliding_window"), 0));
  swa_pattern = static_cast<int>(f.GetInt(key("attention.sliding_window_pattern"), 6));
  attn_scale = static_cast<float>(f.GetFloat(key("attention.scale"), 0));
  if (attn_scale == 0 && head_dim > 0) attn_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  attn_softcap = static_cast<float>(f.GetFloat(key("attn_logit_softcapping"), 0));
  final_softcap = static_cast<float>(f.GetFloat(key("final_logit_softcapping"), 0));
  const GgufTensor* emb = f.Tensor("token_embd.weight");
  vocab = emb && emb->dims.size() == 2 ? static_cast<int>(emb->dims[1]) : 0;
  if (f.Find(key("rope.scaling.type")) && f.GetString(key("rope.scaling.type"), "none") != "none") {
    *error = "rope scaling is not supported";
    return false;
  }
  if (d_model <= 0 || n_layers <= 0 || d_ff <= 0 || n_heads <= 0 || n_kv_heads <= 0 ||
      head_dim <= 0 || head_dim % 2 || vdim != head_dim || n_heads % n_kv_heads || vocab <= 0) {
    *error = "incomplete or unsupported gemma3 hyper-parameters";
    return false;
  }
  return true;
}

Shard Shard::Make(const Config& c, int rank, int ranks) {
  Shard s;
  s.rank = rank;
  s.ranks = ranks;
  s.head_begin = c.n_heads * rank / ranks;
  s.head_end = c.n_heads * (rank + 1) / ranks;
  int group = c.n_heads / c.n_kv_heads;
  s.kv_begin = s.head_begin / group;
  s.kv_end = s.head_end > s.head_begin ? (s.head_end - 1) / group + 1 : s.kv_begin;
  // Feed-forward channels in multiples of 16 (one GEMM panel) where possible.
  int units = c.d_ff % 16 == 0 ? c.d_ff / 16 : c.d_ff;
  int unit = c.d_ff / units;
  s.ff_begin = units * rank / ranks * unit;
  s.ff_end = units * (rank + 1) / ranks * unit;
  return s;
}

bool ReadVector(const GgufFile& f, const std::string& name, size_t n, std::vector<float>* out,
                std::string* error) {
  const GgufTensor* t = f.Tensor(name);
  if (!t || t->elements() != n) { *error = "missing or mis-sized tensor " + name; return false; }
  out->resize(n);
  if (!Dequantize(t->type, t->data, n, out->data())) { *error = "cannot decode " + name; return false; }
  return true;
}

bool PackTensor(const GgufTensor& t, size_t r0, size_t r1, size_t c0, size_t c1,
                PackedMatrix* out, std::string* error, int threads) {
  if (t.dims.size() != 2 || r1 > t.dims[1] || c1 > t.dims[0] || r0 > r1 || c0 > c1) {
    *error = "tensor " + t.name + ": bad shape for the requested slice";
    return false;
  }
  size_t be, bb;
  GgmlTypeBlock(t.type, &be, &bb);
  size_t cols = t.dims[0], row_bytes = cols / be * bb, k = c1 - c0;
  PackedAlloc(r1 - r0, k, out);
  bool ok = true;
  ParallelFor(out->panels, threads, [&](size_t p0, size_t p1) {
    std::vector<float> row(cols);
    for (size_t p = p0; p < p1; ++p) {
      float* dst = out->panel(p);
      for (size_t j = 0; j < kPanel; ++j) {
        size_t r = r0 + p * kPanel + j;
        if (r < r1) {
          if (!Dequantize(t.type, t.data + r * row_bytes, cols, row.data())) ok = false;
          for (size_t kk = 0; kk < k; ++kk) dst[kk * kPanel + j] = row[c0 + kk];
        } else {
          for (size_t kk = 0; kk < k; ++kk) dst[kk * kPanel + j] = 0.f;
        }
      }
    }
  });
  if (!ok) *error = "cannot decode " + t.name;
  return ok;
}

bool RankModel::Load(const GgufFile& file, const Config& config, int rank, int ranks,
                     std::string* error) {
  cfg_ = config;
  shard_ = Shard::Make(config, rank, ranks);
  file_ = &file;
  embed_ = file.Tensor("token_embd.weight");
  if (!embed_ || embed_->dims[0] != static_cast<uint64_t>(cfg_.d_model)) {
    *error = "missing token_embd.weight";
    return false;
  }
  const size_t d = cfg_.d_model, hd = cfg_.head_dim;
  if (!ReadVector(file, "output_norm.weight", d, &out_norm_, error)) return false;
  layers_.resize(cfg_.n_layers);
  for (int l = 0; l < cfg_.n_layers; ++l) {
    Layer& L = layers_[l];
    std::string p = "blk." + std::to_string(l) + ".";
    auto mat = [&](const char* name) -> const GgufTensor* {
      const GgufTensor* t = file.Tensor(p + name);
      if (!t) *error = "missing tensor " + p + name;
      return t;
    };
    if (!ReadVector(file, p + "attn_norm.weight", d, &L.attn_norm, error) ||
        !ReadVector(file, p + "attn_q_norm.weight", hd, &L.q_norm, error) ||
        !ReadVector(file, p + "attn_k_norm.weight", hd, &L.k_norm, error) ||
        !ReadVector(file, p + "post_attention_norm.weight", d, &L.post_attn_norm, error) ||
        !ReadVector(file, p + "ffn_norm.weight", d, &L.ffn_norm, error) ||
        !ReadVector(file, p + "post_ffw_norm.weight", d, &L.post_ffw_norm, error))
      return false;
    const GgufTensor *q = mat("attn_q.weight"), *k = mat("attn_k.weight"), *v = mat("attn_v.weight"),
                     *o = mat("attn_output.weight"), *g = mat("ffn_gate.weight"),
                     *u = mat("ffn_up.weight"), *dn = mat("ffn_down.weight");
    if (!q || !k || !v || !o || !g || !u || !dn) return false;
    size_t h0 = shard_.head_begin * hd, h1 = shard_.head_end * hd;
    size_t kv0 = shard_.kv_begin * hd, kv1 = shard_.kv_end * hd;
    size_t f0 = shard_.ff_begin, f1 = shard_.ff_end;
    if (!PackTensor(*q, h0, h1, 0, d, &L.wq, error) || !PackTensor(*k, kv0, kv1, 0, d, &L.wk, error) ||
        !PackTensor(*v, kv0, kv1, 0, d, &L.wv, error) || !PackTensor(*o, 0, d, h0, h1, &L.wo, error) ||
        !PackTensor(*g, f0, f1, 0, d, &L.gate, error) || !PackTensor(*u, f0, f1, 0, d, &L.up, error) ||
        !PackTensor(*dn, 0, d, f0, f1, &L.down, error))
      return false;
  }
  return true;
}

void RankModel::Attention(const Layer& L, int layer, const float* x, size_t T, int threads,
                          float* out, double* flops) const {
  const size_t hd = cfg_.head_dim, d = cfg_.d_model;
  const size_t nh = shard_.head_end - shard_.head_begin, nkv = shard_.kv_end - shard_.kv_begin;
  const size_t group = cfg_.n_heads / cfg_.n_kv_heads;
  std::vector<float> q(T * nh * hd), k(T * nkv * hd), v(T * nkv * hd), ctx(T * nh * hd);
  Gemm(x, T, d, L.wq, q.data(), nh * hd, threads);
  Gemm(x, T, d, L.wk, k.data(), nkv * hd, threads);
  Gemm(x, T, d, L.wv, v.data(), nkv * hd, threads);
  *flops += 2.0 * T * d * (nh + 2 * nkv) * hd;
  for (size_t h = 0; h < nh; ++h)
    RmsNorm(q.data() + h * hd, T, hd, nh * hd, L.q_norm.data(), cfg_.eps, q.data() + h * hd, nh * hd);
  for (size_t h = 0; h < nkv; ++h)
    RmsNorm(k.data() + h * hd, T, hd, nkv * hd, L.k_norm.data(), cfg_.eps, k.data() + h * hd, nkv * hd);
  const bool global = cfg_.IsGlobal(layer);
  const double base = global ? cfg_.rope_base_global : cfg_.rope_base_local;
  Rope(q.data(), T, nh * hd, nh, hd, base);
  Rope(k.data(), T, nkv * hd, nkv, hd, base);
  for (float& e : q) e *= cfg_.attn_scale;
  const size_t window = (!global && cfg_.sliding_window > 0) ? cfg_.sliding_window : T + 1;
  const size_t kQb = 48;
  std::vector<PackedMatrix> kp(nkv), vp(nkv);
  for (size_t h = 0; h < nkv; ++h) {
    PackRows(k.data() + h * hd, T, hd, nkv * hd, &kp[h]);
    PackCols(v.data() + h * hd, T, hd, nkv * hd, &vp[h]);
  }
  // Query blocks are independent: threads split them.
  const size_t blocks = (T + kQb - 1) / kQb;
  ParallelFor(blocks * nh, threads, [&](size_t b0, size_t b1) {
    std::vector<float> s(kQb * T);
    for (size_t bi = b0; bi < b1; ++bi) {
      size_t h = bi / blocks, t0 = (bi % blocks) * kQb, rows = std::min(kQb, T - t0);
      size_t kvh = (shard_.head_begin + h) / group - shard_.kv_begin;
      size_t keys = t0 + rows;
      Gemm(q.data() + t0 * nh * hd + h * hd, rows, nh * hd, kp[kvh], s.data(), T, 1, false, {keys, hd});
      for (size_t r = 0; r < rows; ++r) {
        size_t t = t0 + r;
        float* sr = s.data() + r * T;
        size_t lo = t + 1 > window ? t + 1 - window : 0;
        float mx = -INFINITY;
        for (size_t j = lo; j <= t; ++j) {
          if (cfg_.attn_softcap > 0) sr[j] = cfg_.attn_softcap * std::tanh(sr[j] / cfg_.attn_softcap);
          mx = std::max(mx, sr[j]);
        }
        double sum = 0;
        for (size_t j = lo; j <= t; ++j) { sr[j] = std::exp(sr[j] - mx); sum += sr[j]; }
        float inv = static_cast<float>(1.0 / sum);
        for (size_t j = 0; j < keys; ++j) sr[j] = (j >= lo && j <= t) ? sr[j] * inv : 0.f;
      }
      Gemm(s.data(), rows, T, vp[kvh], ctx.data() + t0 * nh * hd + h * hd, nh * hd, 1, false,
           {hd, keys});
    }
  });
  for (size_t t0 = 0; t0 < T; t0 += kQb) *flops += 4.0 * nh * hd * std::min(kQb, T - t0) * (t0 + kQb);
  if (nh == 0) {
    std::memset(out, 0, T * d * sizeof(float));
    return;
  }
  Gemm(ctx.data(), T, nh * hd, L.wo, out, d, threads);
  *flops += 2.0 * T * nh * hd * d;
}

bool RankModel::Forward(const int32_t* tokens, size_t T, const Reducer& reduce, int threads,
                        float* out, ForwardStats* stats) const {
  const double t_start = Now();
  ForwardStats st;
  const size_t d = cfg_.d_model;
  std::vector<float> h(T * d), x(T * d), a(T * d);
  size_t be, bb;
  GgmlTypeBlock(embed_->type, &be, &bb);
  const size_t row_bytes = d / be * bb;
  const float scale = std::sqrt(static_cast<float>(d));
  for (size_t t = 0; t < T; ++t) {
    if (tokens[t] < 0 || tokens[t] >= cfg_.vocab) return false;
    Dequantize(embed_->type, embed_->data + static_cast<size_t>(tokens[t]) * row_bytes, d, h.data() + t * d);
    for (size_t i = 0; i < d; ++i) h[t * d + i] *= scale;
  }
  const size_t nf = shard_.ff_end - shard_.ff_begin;
  std::vector<float> g(T * nf), u(T * nf);
  auto sum = [&](float* buf) {
    double t0 = Now();
    bool ok = reduce(buf, T * d);
    st.reduce_s += Now() - t0;
    ++st.reduce_calls;
    return ok;
  };
  for (int l = 0; l < cfg_.n_layers; ++l) {
    const Layer& L = layers_[l];
    RmsNorm(h.data(), T, d, d, L.attn_norm.data(), cfg_.eps, x.data(), d);
    Attention(L, l, x.data(), T, threads, a.data(), &st.flops);
    if (!sum(a.data())) return false;
    RmsNorm(a.data(), T, d, d, L.post_attn_norm.data(), cfg_.eps, a.data(), d);
    for (size_t i = 0; i < T * d; ++i) h[i] += a[i];
    RmsNorm(h.data(), T, d, d, L.ffn_norm.data(), cfg_.eps, x.data(), d);
    if (nf > 0) {
      Gemm(x.data(), T, d, L.gate, g.data(), nf, threads);
      Gemm(x.data(), T, d, L.up, u.data(), nf, threads);
      for (size_t i = 0; i < T * nf; ++i) g[i] = GeluTanh(g[i]) * u[i];
      Gemm(g.data(), T, nf, L.down, a.data(), d, threads);
      st.flops += 6.0 * T * d * nf;
    } else {
      std::fill(a.begin(), a.end(), 0.f);
    }
    if (!sum(a.data())) return false;
    RmsNorm(a.data(), T, d, d, L.post_ffw_norm.data(), cfg_.eps, a.data(), d);
    for (size_t i = 0; i < T * d; ++i) h[i] += a[i];
  }
  RmsNorm(h.data(), T, d, d, out_norm_.data(), cfg_.eps, out, d);
  st.total_s = Now() - t_start;
  if (stats) *stats = st;
  return true;
}

bool LmHead::Load(const GgufFile& file, const Config& config, int threads, std::string* error) {
  const GgufTensor* t = file.Tensor("output.weight");
  if (!t) t = file.Tensor("token_embd.weight");  // tied
  if (!t) { *error = "no output projection"; return false; }
  softcap_ = config.final_softcap;
  return PackTensor(*t, 0, t->dims[1], 0, t->dims[0], &w_, error, threads);
}

void LmHead::Logits(const float* hidden, size_t rows, float* logits, int threads) const {
  Gemm(hidden, rows, w_.k, w_, logits, w_.n, threads);
  if (softcap_ > 0)
    for (size_t i = 0; i < rows * w_.n; ++i) logits[i] = softcap_ * std::tanh(logits[i] / softcap_);
}

}  // namespace gemma3
