// gemm.h — the matrix kernel of the forward pass: Y[t][n] (+)= sum_k X[t][k] * W[n][k], with
// W repacked once into panels of 16 output columns (panel-major, [K][16] inside a panel) so
// that an AVX2/FMA micro-kernel keeps a 6x16 tile of Y in registers. A portable scalar kernel
// is used when the CPU lacks AVX2+FMA. Threads split the panels.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace gemma3 {

inline constexpr size_t kPanel = 16;

/// A matrix of N output rows by K inputs, packed for Gemm. Padding columns are zero.
struct PackedMatrix {
  size_t n = 0, k = 0, panels = 0;
  std::unique_ptr<float[], void (*)(float*)> data{nullptr, [](float*) {}};
  float* panel(size_t p) const { return data.get() + p * k * kPanel; }
};

/// Allocates (64-byte aligned) room for an n x k matrix; contents undefined.
void PackedAlloc(size_t n, size_t k, PackedMatrix* out);
/// Packs w[n][k] (row stride ld): output row j uses row j of w.
void PackRows(const float* w, size_t n, size_t k, size_t ld, PackedMatrix* out);
/// Packs b[k][n] (row stride ld): output row j uses column j of b.
void PackCols(const float* b, size_t k, size_t n, size_t ld, PackedMatrix* out);

struct GemmRange {
  size_t n_end = static_cast<size_t>(-1);  ///< compute only output columns < n_end
  size_t k_end = static_cast<size_t>(-1);  ///< use only inputs < k_end
};

/// y[t][j] = (accumulate ? y[t][j] : 0) + sum_k x[t][k] * W[j][k] for t < rows, j < W.n.
void Gemm(const float* x, size_t rows, size_t ldx, const PackedMatrix& w, float* y, size_t ldy,
          int threads, bool accumulate = false, GemmRange range = {});

/// Runs body(i) for i in [0, n) on `threads` threads (contiguous chunks).
void ParallelFor(size_t n, int threads, const std::function<void(size_t, size_t)>& body);

/// Whether the AVX2+FMA kernel is in use.
bool GemmUsesAvx2();

}  // namespace gemma3
