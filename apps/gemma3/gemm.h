// gemm.h — the matrix kernel of the forward pass: Y[t][n] (+)= sum_k X[t][k] * W[n][k], with
// W repacked once into panels of 16 output columns (panel-major, [K][16] inside a panel) so
// that an AVX2/FMA micro-kernel keeps a 6x16 tile of Y in registers. A portable scalar kernel
// is used when the CPU lacks AVX2+FMA. Threads split the panels.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

namespace gemma3 {

inline constexpr size_t kPanel = 16;

/// A matrix of N output rows by K inputs, packed for Gemm. Padding columns are zero.
struct PackedMatrix {
  size_t n = 0, k = 0, panels = 0;
  std::unique_ptr<float[], void (*)(float*)> data{nullptr, [](float*) {}};
  float* panel(size_t p) const { return data.get() + p * k * kPanel; }
};

/// Allocates (64-byte aligned) room for an n x k matrix; contents undefined unless `zero`.
/// False, with *out empty, if the memory cannot be had (or its size overflows).
[[nodiscard]] bool PackedAlloc(size_t n, size_t k, PackedMatrix* out, bool zero = false);
/// Packs w[n][k] (row stride ld): output row j uses row j of w.
void PackRows(const float* w, size_t n, size_t k, size_t ld, PackedMatrix* out);
/// Packs b[k][n] (row stride ld): output row j uses column j of b.
void PackCols(const float* b, size_t k, size_t n, size_t ld, PackedMatrix* out);
/// Writes output row j < w->n from row[w->k] (how a matrix grows by rows: a key cache).
void SetOutputRow(PackedMatrix* w, size_t j, const float* row);
/// Writes input kk < w->k from col[w->n] (how a matrix grows by inputs: a value cache).
void SetInput(PackedMatrix* w, size_t kk, const float* col);
/// Non-owning views that let Gemm start part-way: the output rows from n0 (a multiple of
/// kPanel) on, or the inputs from k0 on (Gemm must then be limited to k_end <= w.k - k0).
PackedMatrix OutputsFrom(const PackedMatrix& w, size_t n0);
PackedMatrix InputsFrom(const PackedMatrix& w, size_t k0);

struct GemmRange {
  size_t n_end = static_cast<size_t>(-1);  ///< compute only output columns < n_end
  size_t k_end = static_cast<size_t>(-1);  ///< use only inputs < k_end
};

/// y[t][j] = (accumulate ? y[t][j] : 0) + sum_k x[t][k] * W[j][k] for t < rows, j < W.n.
void Gemm(const float* x, size_t rows, size_t ldx, const PackedMatrix& w, float* y, size_t ldy,
          int threads, bool accumulate = false, GemmRange range = {});

/// Runs body(begin, end) over [0, n) split into contiguous chunks, one per thread, on at most
/// `threads` threads (the caller's among them). The body is passed by reference, never copied
/// into a heap-allocated function object: a call on one thread allocates nothing.
template <class Body>
void ParallelFor(size_t n, int threads, Body&& body);

/// ParallelFor whose body also gets the index of its chunk, in [0, ParallelChunks(n, threads)):
/// body(chunk, begin, end), for per-thread scratch.
template <class Body>
void ParallelForChunks(size_t n, int threads, Body&& body);
/// How many chunks ParallelFor splits n items into on `threads` threads.
size_t ParallelChunks(size_t n, int threads);

/// The untyped form both forward to: fn(ctx, chunk, begin, end).
void ParallelForImpl(size_t n, int threads, void* ctx, void (*fn)(void*, size_t, size_t, size_t));

template <class Body>
void ParallelForChunks(size_t n, int threads, Body&& body) {
  using B = std::remove_reference_t<Body>;
  ParallelForImpl(n, threads, const_cast<void*>(static_cast<const void*>(&body)),
                  [](void* ctx, size_t c, size_t b, size_t e) { (*static_cast<B*>(ctx))(c, b, e); });
}

template <class Body>
void ParallelFor(size_t n, int threads, Body&& body) {
  ParallelForChunks(n, threads, [&body](size_t, size_t b, size_t e) { body(b, e); });
}

/// Whether the AVX2+FMA kernel is in use.
bool GemmUsesAvx2();

}  // namespace gemma3
