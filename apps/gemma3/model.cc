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

#include <time.h>

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

// The NeoX rotation of position `pos` into cs/sn[hd / 2].
void RopeAngles(size_t pos, size_t hd, double base, float* cs, float* sn) {
  for (size_t i = 0; i < hd / 2; ++i) {
    double theta = static_cast<double>(pos) * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
    cs[i] = static_cast<float>(std::cos(theta));
    sn[i] = static_cast<float>(std::sin(theta));
  }
}

// Rotates `heads` heads of one row by the angles of RopeAngles.
void Rope(float* x, size_t heads, size_t hd, const float* cs, const float* sn) {
  const size_t half = hd / 2;
  for (size_t h = 0; h < heads; ++h) {
    float* v = x + h * hd;
    for (size_t i = 0; i < half; ++i) {
      float a = v[i], b = v[i + half];
      v[i] = a * cs[i] - b * sn[i];
      v[i + half] = a * sn[i] + b * cs[i];
    }
  }
}

// Grows v to at least n elements (never shrinks, so a smaller step reuses the room).
void Grow(std::vector<float>* v, size_t n) {
  if (v->size() < n) v->resize(n);
}

// Query rows per attention block (a block is one GEMM of scores against the cached keys).
constexpr size_t kQb = 48;

float GeluTanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

}  // namespace

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

equarx::Status Config::Read(const GgufFile& f) {
  arch = f.GetString("general.architecture", "");
  if (arch != "gemma3") return equarx::InvalidArgument("not a gemma3 model (architecture '" + arch + "')");
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
  if (f.Find(key("rope.scaling.type")) && f.GetString(key("rope.scaling.type"), "none") != "none")
    return equarx::Unsupported("rope scaling is not supported");
  if (d_model <= 0 || n_layers <= 0 || d_ff <= 0 || n_heads <= 0 || n_kv_heads <= 0 ||
      head_dim <= 0 || head_dim % 2 || vdim != head_dim || n_heads % n_kv_heads || vocab <= 0)
    return equarx::InvalidArgument("incomplete or unsupported gemma3 hyper-parameters");
  return equarx::Status::Ok();
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

equarx::Status ReadVector(const GgufFile& f, const std::string& name, size_t n, std::vector<float>* out) {
  const GgufTensor* t = f.Tensor(name);
  if (!t || t->elements() != n) return equarx::InvalidArgument("missing or mis-sized tensor " + name);
  out->resize(n);
  if (!Dequantize(t->type, t->data, n, out->data())) return equarx::InvalidArgument("cannot decode " + name);
  return equarx::Status::Ok();
}

equarx::Status PackTensor(const GgufTensor& t, size_t r0, size_t r1, size_t c0, size_t c1,
                          PackedMatrix* out, int threads) {
  if (t.dims.size() != 2 || r1 > t.dims[1] || c1 > t.dims[0] || r0 > r1 || c0 > c1)
    return equarx::InvalidArgument("tensor " + t.name + ": bad shape for the requested slice");
  size_t be, bb;
  GgmlTypeBlock(t.type, &be, &bb);
  size_t cols = t.dims[0], row_bytes = cols / be * bb, k = c1 - c0;
  if (!PackedAlloc(r1 - r0, k, out)) return equarx::InvalidArgument("out of memory for tensor " + t.name);
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
  if (!ok) return equarx::InvalidArgument("cannot decode " + t.name);
  return equarx::Status::Ok();
}

equarx::Status RankModel::Load(const GgufFile& file, const Config& config, int rank, int ranks) {
  cfg_ = config;
  shard_ = Shard::Make(config, rank, ranks);
  file_ = &file;
  embed_ = file.Tensor("token_embd.weight");
  if (!embed_ || embed_->dims[0] != static_cast<uint64_t>(cfg_.d_model))
    return equarx::InvalidArgument("missing token_embd.weight");
  const size_t d = cfg_.d_model, hd = cfg_.head_dim;
  EQUARX_RETURN_IF_ERROR(ReadVector(file, "output_norm.weight", d, &out_norm_));
  layers_.resize(cfg_.n_layers);
  for (int l = 0; l < cfg_.n_layers; ++l) {
    Layer& L = layers_[l];
    std::string p = "blk." + std::to_string(l) + ".", missing;
    auto mat = [&](const char* name) -> const GgufTensor* {
      const GgufTensor* t = file.Tensor(p + name);
      if (!t) missing = p + name;  // the last one missing is the one reported
      return t;
    };
    EQUARX_RETURN_IF_ERROR(ReadVector(file, p + "attn_norm.weight", d, &L.attn_norm));
    EQUARX_RETURN_IF_ERROR(ReadVector(file, p + "attn_q_norm.weight", hd, &L.q_norm));
    EQUARX_RETURN_IF_ERROR(ReadVector(file, p + "attn_k_norm.weight", hd, &L.k_norm));
    EQUARX_RETURN_IF_ERROR(ReadVector(file, p + "post_attention_norm.weight", d, &L.post_attn_norm));
    EQUARX_RETURN_IF_ERROR(ReadVector(file, p + "ffn_norm.weight", d, &L.ffn_norm));
    EQUARX_RETURN_IF_ERROR(ReadVector(file, p + "post_ffw_norm.weight", d, &L.post_ffw_norm));
    const GgufTensor *q = mat("attn_q.weight"), *k = mat("attn_k.weight"), *v = mat("attn_v.weight"),
                     *o = mat("attn_output.weight"), *g = mat("ffn_gate.weight"),
                     *u = mat("ffn_up.weight"), *dn = mat("ffn_down.weight");
    if (!q || !k || !v || !o || !g || !u || !dn) return equarx::InvalidArgument("missing tensor " + missing);
    size_t h0 = shard_.head_begin * hd, h1 = shard_.head_end * hd;
    size_t kv0 = shard_.kv_begin * hd, kv1 = shard_.kv_end * hd;
    size_t f0 = shard_.ff_begin, f1 = shard_.ff_end;
    EQUARX_RETURN_IF_ERROR(PackTensor(*q, h0, h1, 0, d, &L.wq));
    EQUARX_RETURN_IF_ERROR(PackTensor(*k, kv0, kv1, 0, d, &L.wk));
    EQUARX_RETURN_IF_ERROR(PackTensor(*v, kv0, kv1, 0, d, &L.wv));
    EQUARX_RETURN_IF_ERROR(PackTensor(*o, 0, d, h0, h1, &L.wo));
    EQUARX_RETURN_IF_ERROR(PackTensor(*g, f0, f1, 0, d, &L.gate));
    EQUARX_RETURN_IF_ERROR(PackTensor(*u, f0, f1, 0, d, &L.up));
    EQUARX_RETURN_IF_ERROR(PackTensor(*dn, 0, d, f0, f1, &L.down));
  }
  return equarx::Status::Ok();
}

bool RankModel::InitCache(size_t capacity, KvCache* cache) const {
  const size_t nkv = shard_.kv_end - shard_.kv_begin, hd = cfg_.head_dim;
  cache->capacity = cache->length = 0;
  cache->k.resize(cfg_.n_layers * nkv);
  cache->v.resize(cfg_.n_layers * nkv);
  for (size_t i = 0; i < cache->k.size(); ++i)
    if (!PackedAlloc(capacity, hd, &cache->k[i], true) || !PackedAlloc(hd, capacity, &cache->v[i], true)) {
      cache->k.clear();
      cache->v.clear();
      return false;
    }
  cache->capacity = capacity;
  return true;
}

// ws->x[T][d] -> ws->a[T][d] for the positions cache->length.. of this step.
void RankModel::Attention(const Layer& L, int layer, size_t T, KvCache* cache, Workspace* ws,
                          int threads, double* flops) const {
  const size_t hd = cfg_.head_dim, d = cfg_.d_model;
  const size_t nh = shard_.head_end - shard_.head_begin, nkv = shard_.kv_end - shard_.kv_begin;
  const size_t group = cfg_.n_heads / cfg_.n_kv_heads, pos0 = cache->length;
  float *q = ws->q.data(), *k = ws->k.data(), *v = ws->v.data(), *ctx = ws->ctx.data();
  Gemm(ws->x.data(), T, d, L.wq, q, nh * hd, threads);
  Gemm(ws->x.data(), T, d, L.wk, k, nkv * hd, threads);
  Gemm(ws->x.data(), T, d, L.wv, v, nkv * hd, threads);
  *flops += 2.0 * T * d * (nh + 2 * nkv) * hd;
  for (size_t h = 0; h < nh; ++h)
    RmsNorm(q + h * hd, T, hd, nh * hd, L.q_norm.data(), cfg_.eps, q + h * hd, nh * hd);
  for (size_t h = 0; h < nkv; ++h)
    RmsNorm(k + h * hd, T, hd, nkv * hd, L.k_norm.data(), cfg_.eps, k + h * hd, nkv * hd);
  const bool global = cfg_.IsGlobal(layer);
  const double base = global ? cfg_.rope_base_global : cfg_.rope_base_local;
  float *cs = ws->rope.data(), *sn = cs + hd / 2;
  for (size_t t = 0; t < T; ++t) {
    RopeAngles(pos0 + t, hd, base, cs, sn);
    Rope(q + t * nh * hd, nh, hd, cs, sn);
    Rope(k + t * nkv * hd, nkv, hd, cs, sn);
  }
  for (size_t i = 0; i < T * nh * hd; ++i) q[i] *= cfg_.attn_scale;
  PackedMatrix* kc = nkv ? &cache->k[layer * nkv] : nullptr;
  PackedMatrix* vc = nkv ? &cache->v[layer * nkv] : nullptr;
  for (size_t h = 0; h < nkv; ++h)
    for (size_t t = 0; t < T; ++t) {
      SetOutputRow(&kc[h], pos0 + t, k + t * nkv * hd + h * hd);
      SetInput(&vc[h], pos0 + t, v + t * nkv * hd + h * hd);
    }
  // Position P attends to keys [lo(P), P]: all earlier ones on global layers, the last
  // `sliding_window` on local ones. A block of query rows runs from the first key any of its
  // rows sees (rounded down to a key panel) to its last row's position; each row's weights
  // outside its own range are zero, which adds nothing to the values' sum.
  const size_t window = (!global && cfg_.sliding_window > 0) ? size_t(cfg_.sliding_window) : SIZE_MAX;
  auto lo = [window](size_t P) { return P + 1 > window ? P + 1 - window : size_t(0); };
  const size_t blocks = (T + kQb - 1) / kQb, ld_s = cache->capacity;
  ParallelForChunks(blocks * nh, threads, [&](size_t chunk, size_t b0, size_t b1) {
    float* s = ws->scores.data() + chunk * std::min(kQb, T) * ld_s;
    for (size_t bi = b0; bi < b1; ++bi) {
      const size_t h = bi / blocks, t0 = (bi % blocks) * kQb, rows = std::min(kQb, T - t0);
      const size_t kvh = (shard_.head_begin + h) / group - shard_.kv_begin;
      const size_t P0 = pos0 + t0, k0 = lo(P0) / kPanel * kPanel, span = P0 + rows - k0;
      Gemm(q + t0 * nh * hd + h * hd, rows, nh * hd, OutputsFrom(kc[kvh], k0), s, ld_s, 1, false,
           {span, hd});
      for (size_t r = 0; r < rows; ++r) {
        const size_t P = P0 + r, j0 = lo(P) - k0, j1 = P - k0;  // the row's keys, inclusive
        float* sr = s + r * ld_s;
        float mx = -INFINITY;
        for (size_t j = j0; j <= j1; ++j) {
          if (cfg_.attn_softcap > 0) sr[j] = cfg_.attn_softcap * std::tanh(sr[j] / cfg_.attn_softcap);
          mx = std::max(mx, sr[j]);
        }
        double sum = 0;
        for (size_t j = j0; j <= j1; ++j) { sr[j] = std::exp(sr[j] - mx); sum += sr[j]; }
        float inv = static_cast<float>(1.0 / sum);
        for (size_t j = 0; j < span; ++j) sr[j] = (j >= j0 && j <= j1) ? sr[j] * inv : 0.f;
      }
      Gemm(s, rows, ld_s, InputsFrom(vc[kvh], k0), ctx + t0 * nh * hd + h * hd, nh * hd, 1, false,
           {hd, span});
    }
  });
  for (size_t t0 = 0; t0 < T; t0 += kQb) {
    const size_t rows = std::min(kQb, T - t0), P0 = pos0 + t0;
    *flops += 4.0 * nh * hd * rows * (P0 + rows - lo(P0) / kPanel * kPanel);
  }
  if (nh == 0) {
    std::memset(ws->a.data(), 0, T * d * sizeof(float));
    return;
  }
  Gemm(ctx, T, nh * hd, L.wo, ws->a.data(), d, threads);
  *flops += 2.0 * T * nh * hd * d;
}

bool RankModel::Forward(const int32_t* tokens, size_t T, const Reducer& reduce, int threads,
                        float* out, ForwardStats* stats) const {
  KvCache cache;
  if (!InitCache(T, &cache)) return false;
  Workspace ws;
  return Step(tokens, T, &cache, &ws, reduce, threads, out, stats);
}

bool RankModel::Step(const int32_t* tokens, size_t T, KvCache* cache, Workspace* ws,
                     const Reducer& reduce, int threads, float* out, ForwardStats* stats) const {
  const double t_start = Now();
  ForwardStats st;
  if (T == 0 || cache->length + T > cache->capacity) return false;
  const size_t d = cfg_.d_model, hd = cfg_.head_dim, nf = shard_.ff_end - shard_.ff_begin;
  const size_t nh = shard_.head_end - shard_.head_begin, nkv = shard_.kv_end - shard_.kv_begin;
  for (auto* b : {&ws->h, &ws->x, &ws->a}) Grow(b, T * d);
  for (auto* b : {&ws->g, &ws->u}) Grow(b, T * nf);
  for (auto* b : {&ws->q, &ws->ctx}) Grow(b, T * nh * hd);
  for (auto* b : {&ws->k, &ws->v}) Grow(b, T * nkv * hd);
  Grow(&ws->rope, hd);
  Grow(&ws->scores, ParallelChunks(((T + kQb - 1) / kQb) * nh, threads) * std::min(kQb, T) * cache->capacity);
  float *h = ws->h.data(), *x = ws->x.data(), *a = ws->a.data(), *g = ws->g.data(), *u = ws->u.data();
  size_t be, bb;
  GgmlTypeBlock(embed_->type, &be, &bb);
  const size_t row_bytes = d / be * bb;
  const float scale = std::sqrt(static_cast<float>(d));
  for (size_t t = 0; t < T; ++t) {
    if (tokens[t] < 0 || tokens[t] >= cfg_.vocab) return false;
    Dequantize(embed_->type, embed_->data + static_cast<size_t>(tokens[t]) * row_bytes, d, h + t * d);
    for (size_t i = 0; i < d; ++i) h[t * d + i] *= scale;
  }
  auto sum = [&](float* buf) {
    const double t0 = Now(), c0 = ThreadCpuSeconds();
    bool ok = reduce(buf, T * d);
    st.reduce_s += Now() - t0;
    st.reduce_cpu_s += ThreadCpuSeconds() - c0;
    ++st.reduce_calls;
    return ok;
  };
  for (int l = 0; l < cfg_.n_layers; ++l) {
    const Layer& L = layers_[l];
    RmsNorm(h, T, d, d, L.attn_norm.data(), cfg_.eps, x, d);
    Attention(L, l, T, cache, ws, threads, &st.flops);
    if (!sum(a)) return false;
    RmsNorm(a, T, d, d, L.post_attn_norm.data(), cfg_.eps, a, d);
    for (size_t i = 0; i < T * d; ++i) h[i] += a[i];
    RmsNorm(h, T, d, d, L.ffn_norm.data(), cfg_.eps, x, d);
    if (nf > 0) {
      Gemm(x, T, d, L.gate, g, nf, threads);
      Gemm(x, T, d, L.up, u, nf, threads);
      for (size_t i = 0; i < T * nf; ++i) g[i] = GeluTanh(g[i]) * u[i];
      Gemm(g, T, nf, L.down, a, d, threads);
      st.flops += 6.0 * T * d * nf;
    } else {
      std::fill(a, a + T * d, 0.f);
    }
    if (!sum(a)) return false;
    RmsNorm(a, T, d, d, L.post_ffw_norm.data(), cfg_.eps, a, d);
    for (size_t i = 0; i < T * d; ++i) h[i] += a[i];
  }
  RmsNorm(h, T, d, d, out_norm_.data(), cfg_.eps, out, d);
  cache->length += T;
  st.total_s = Now() - t_start;
  if (stats) *stats = st;
  return true;
}

equarx::Status LmHead::Load(const GgufFile& file, const Config& config, int threads) {
  return LoadSlice(file, config, 0, static_cast<size_t>(config.vocab), threads);
}

equarx::Status LmHead::LoadSlice(const GgufFile& file, const Config& config, size_t v0, size_t v1, int threads) {
  const GgufTensor* t = file.Tensor("output.weight");
  if (!t) t = file.Tensor("token_embd.weight");  // tied
  if (!t) return equarx::InvalidArgument("no output projection");
  softcap_ = config.final_softcap;
  first_ = v0;
  return PackTensor(*t, v0, v1, 0, t->dims[0], &w_, threads);
}

void LmHead::Logits(const float* hidden, size_t rows, float* logits, int threads) const {
  Gemm(hidden, rows, w_.k, w_, logits, w_.n, threads);
  if (softcap_ > 0)
    for (size_t i = 0; i < rows * w_.n; ++i) logits[i] = softcap_ * std::tanh(logits[i] / softcap_);
}

}  // namespace gemma3
