// model.h — Gemma 3 (text) for prefill, tensor-parallel in the Megatron style.
//
// Each rank holds a shard of every layer: attention heads [h0, h1) (Q/K/V column split, the
// matching input columns of O), feed-forward channels [f0, f1) (gate/up column split, the
// matching input columns of down). A layer then needs two sums over ranks, of the attention
// output and of the MLP output, which the caller supplies as a Reducer (equarx AllReduce).
// Everything else (norms, residual stream, embedding) is replicated. When there are fewer
// heads than ranks, some ranks hold no heads and contribute zeros to the first sum. The
// K/V heads a rank's query heads need are computed on that rank (replicated under GQA).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gemm.h"
#include "gguf.h"

namespace gemma3 {

struct Config {
  std::string arch = "gemma3";
  int d_model = 0, n_layers = 0, d_ff = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int vocab = 0;
  float eps = 1e-6f;
  float rope_base_global = 1e6f, rope_base_local = 1e4f;
  int sliding_window = 0;   ///< 0 = no sliding window
  int swa_pattern = 6;      ///< layer l is global when (l + 1) % swa_pattern == 0
  float attn_scale = 0;     ///< multiplies q; 1/sqrt(head_dim) unless the metadata says
  float attn_softcap = 0, final_softcap = 0;  ///< 0 = none
  bool IsGlobal(int layer) const { return swa_pattern <= 0 || (layer + 1) % swa_pattern == 0; }
  equarx::Status Read(const GgufFile& f);
};

/// The part of the work rank `rank` of `ranks` owns.
struct Shard {
  int rank = 0, ranks = 1;
  int head_begin = 0, head_end = 0, kv_begin = 0, kv_end = 0, ff_begin = 0, ff_end = 0;
  static Shard Make(const Config& c, int rank, int ranks);
};

/// Sums `count` floats over all ranks in place; false on failure.
using Reducer = std::function<bool(float* buf, size_t count)>;

/// CPU time the calling thread has used, in seconds (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();

struct ForwardStats {
  double total_s = 0, reduce_s = 0;
  double reduce_cpu_s = 0;  ///< the calling thread's CPU time inside the reducer
  double flops = 0;  ///< multiply-adds x 2 done by this rank
  size_t reduce_calls = 0;
};

/// The keys and values of the positions a sequence has run so far, per layer and per KV head
/// of this rank, packed as the attention GEMMs read them: keys as output rows (PackRows
/// layout), values as inputs (PackCols layout), with room for `capacity` positions. A forward
/// step appends the K/V of its tokens; later steps attend to them instead of recomputing.
struct KvCache {
  size_t capacity = 0;  ///< positions it has room for
  size_t length = 0;    ///< positions written: the position of the next token
  std::vector<PackedMatrix> k, v;  ///< [layer * kv_heads_of_this_rank + head]
};

/// Scratch of forward steps, grown to the largest step and the cache's capacity and then
/// reused: a decode step (one token) allocates nothing.
struct Workspace {
  std::vector<float> h, x, a, g, u, q, k, v, ctx, scores, rope;
};

/// One rank's weights and the forward pass.
class RankModel {
 public:
  equarx::Status Load(const GgufFile& file, const Config& config, int rank, int ranks);
  /// tokens[T] -> out[T][d_model]: the final-normed hidden states, identical on every rank
  /// when the reducer's results are. `threads` is this rank's GEMM thread count. The prefill
  /// of a whole sequence: Step on a fresh cache of T positions.
  bool Forward(const int32_t* tokens, size_t T, const Reducer& reduce, int threads, float* out,
               ForwardStats* stats) const;
  /// An empty cache with room for `capacity` positions of this rank's KV heads; false (and a
  /// cache of no room) if the memory cannot be had.
  [[nodiscard]] bool InitCache(size_t capacity, KvCache* cache) const;
  /// Runs tokens[T] at positions cache->length .. cache->length + T - 1: attends to every
  /// cached position (causal, the sliding window on local layers) and to the step's own,
  /// appends the step's K/V to the cache and writes out[T][d_model]. A prompt is one step
  /// (prefill), each generated token one more (decode). Per row, the result is bitwise the
  /// same however the positions are split into steps (the GEMMs give a row's result
  /// independently of the other rows; attention adds the same terms in the same order).
  /// False if a token is out of range, the cache has no room, or a reduction fails.
  bool Step(const int32_t* tokens, size_t T, KvCache* cache, Workspace* ws, const Reducer& reduce,
            int threads, float* out, ForwardStats* stats) const;
  const Config& config() const { return cfg_; }
  const Shard& shard() const { return shard_; }

 private:
  struct Layer {
    std::vector<float> attn_norm, q_norm, k_norm, post_attn_norm, ffn_norm, post_ffw_norm;
    PackedMatrix wq, wk, wv, wo, gate, up, down;
  };
  void Attention(const Layer& L, int layer, size_t T, KvCache* cache, Workspace* ws, int threads,
                 double* flops) const;
  Config cfg_;
  Shard shard_;
  const GgufFile* file_ = nullptr;
  const GgufTensor* embed_ = nullptr;
  std::vector<float> out_norm_;
  std::vector<Layer> layers_;
};

/// The tied output projection: logits = hidden . embedding^T, for the full vocabulary or for
/// the slice [first, first + vocab()) of it (a tensor-parallel rank's share).
class LmHead {
 public:
  equarx::Status Load(const GgufFile& file, const Config& config, int threads);
  /// Only tokens [v0, v1).
  equarx::Status LoadSlice(const GgufFile& file, const Config& config, size_t v0, size_t v1, int threads);
  /// logits[rows][vocab()] for hidden[rows][d_model]: logits[r][j] is token first() + j's,
  /// bitwise the same as the full head's.
  void Logits(const float* hidden, size_t rows, float* logits, int threads) const;
  size_t vocab() const { return w_.n; }
  size_t first() const { return first_; }

 private:
  PackedMatrix w_;
  size_t first_ = 0;
  float softcap_ = 0;
};

/// Dequantizes rows [r0, r1) and columns [c0, c1) of a 2-D GGUF tensor (dims[0] = columns)
/// and packs them for Gemm (output j = row r0 + j). Works row by row, so huge tensors never
/// exist in f32 twice.
equarx::Status PackTensor(const GgufTensor& t, size_t r0, size_t r1, size_t c0, size_t c1,
                          PackedMatrix* out, int threads = 1);
/// Dequantizes a whole 1-D tensor.
equarx::Status ReadVector(const GgufFile& f, const std::string& name, size_t n, std::vector<float>* out);

}  // namespace gemma3
