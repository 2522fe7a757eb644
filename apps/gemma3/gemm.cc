// gemm.cc — packing, the 6x16 AVX2/FMA micro-kernel with a K-blocked loop nest, a kernel for
// fewer rows (decode) with the same bits, and a scalar fallback. Blocking: K in chunks of 256
// (a 16 KiB slice of one panel stays in L1 while six rows of X stream past it); the Y tile is
// loaded/stored once per K chunk.
#include "gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace gemma3 {
namespace {

constexpr size_t kMr = 6;
constexpr size_t kKc = 256;

// Scalar tile: rows x 16 outputs over k in [k0, k1).
void TileScalar(const float* x, size_t ldx, size_t rows, const float* panel, size_t k0,
                size_t k1, float* y, size_t ldy, size_t cols, bool load) {
  float acc[kMr][kPanel];
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < kPanel; ++j) acc[r][j] = (load && j < cols) ? y[r * ldy + j] : 0.f;
  for (size_t kk = k0; kk < k1; ++kk) {
    const float* w = panel + kk * kPanel;
    for (size_t r = 0; r < rows; ++r) {
      float xv = x[r * ldx + kk];
      for (size_t j = 0; j < kPanel; ++j) acc[r][j] += xv * w[j];
    }
  }
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < cols; ++j) y[r * ldy + j] = acc[r][j];
}

__attribute__((target("avx2,fma"))) void TileAvx2(const float* x, size_t ldx, size_t rows,
                                                  const float* panel, size_t k0, size_t k1,
                                                  float* y, size_t ldy, size_t cols, bool load) {
  if (rows != kMr || cols != kPanel) {  // edge tiles: a padded copy keeps one code path
    float xb[kMr * kKc] = {};
    float yb[kMr * kPanel] = {};
    for (size_t r = 0; r < rows; ++r) {
      std::memcpy(xb + r * kKc, x + r * ldx + k0, (k1 - k0) * sizeof(float));
      if (load) std::memcpy(yb + r * kPanel, y + r * ldy, cols * sizeof(float));
    }
    TileAvx2(xb, kKc, kMr, panel + k0 * kPanel, 0, k1 - k0, yb, kPanel, kPanel, true);
    for (size_t r = 0; r < rows; ++r) std::memcpy(y + r * ldy, yb + r * kPanel, cols * sizeof(float));
    return;
  }
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (load) {
    c00 = _mm256_loadu_ps(y + 0 * ldy); c01 = _mm256_loadu_ps(y + 0 * ldy + 8);
    c10 = _mm256_loadu_ps(y + 1 * ldy); c11 = _mm256_loadu_ps(y + 1 * ldy + 8);
    c20 = _mm256_loadu_ps(y + 2 * ldy); c21 = _mm256_loadu_ps(y + 2 * ldy + 8);
    c30 = _mm256_loadu_ps(y + 3 * ldy); c31 = _mm256_loadu_ps(y + 3 * ldy + 8);
    c40 = _mm256_loadu_ps(y + 4 * ldy); c41 = _mm256_loadu_ps(y + 4 * ldy + 8);
    c50 = _mm256_loadu_ps(y + 5 * ldy); c51 = _mm256_loadu_ps(y + 5 * ldy + 8);
  } else {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  }
  const float* x0 = x;
  const float* x1 = x + ldx;
  const float* x2 = x + 2 * ldx;
  const float* x3 = x + 3 * ldx;
  const float* x4 = x + 4 * ldx;
  const float* x5 = x + 5 * ldx;
  for (size_t kk = k0; kk < k1; ++kk) {
    const __m256 w0 = _mm256_load_ps(panel + kk * kPanel);
    const __m256 w1 = _mm256_load_ps(panel + kk * kPanel + 8);
    __m256 a = _mm256_broadcast_ss(x0 + kk);
    c00 = _mm256_fmadd_ps(a, w0, c00); c01 = _mm256_fmadd_ps(a, w1, c01);
    a = _mm256_broadcast_ss(x1 + kk);
    c10 = _mm256_fmadd_ps(a, w0, c10); c11 = _mm256_fmadd_ps(a, w1, c11);
    a = _mm256_broadcast_ss(x2 + kk);
    c20 = _mm256_fmadd_ps(a, w0, c20); c21 = _mm256_fmadd_ps(a, w1, c21);
    a = _mm256_broadcast_ss(x3 + kk);
    c30 = _mm256_fmadd_ps(a, w0, c30); c31 = _mm256_fmadd_ps(a, w1, c31);
    a = _mm256_broadcast_ss(x4 + kk);
    c40 = _mm256_fmadd_ps(a, w0, c40); c41 = _mm256_fmadd_ps(a, w1, c41);
    a = _mm256_broadcast_ss(x5 + kk);
    c50 = _mm256_fmadd_ps(a, w0, c50); c51 = _mm256_fmadd_ps(a, w1, c51);
  }
  _mm256_storeu_ps(y + 0 * ldy, c00); _mm256_storeu_ps(y + 0 * ldy + 8, c01);
  _mm256_storeu_ps(y + 1 * ldy, c10); _mm256_storeu_ps(y + 1 * ldy + 8, c11);
  _mm256_storeu_ps(y + 2 * ldy, c20); _mm256_storeu_ps(y + 2 * ldy + 8, c21);
  _mm256_storeu_ps(y + 3 * ldy, c30); _mm256_storeu_ps(y + 3 * ldy + 8, c31);
  _mm256_storeu_ps(y + 4 * ldy, c40); _mm256_storeu_ps(y + 4 * ldy + 8, c41);
  _mm256_storeu_ps(y + 5 * ldy, c50); _mm256_storeu_ps(y + 5 * ldy + 8, c51);
}

// Rows of fewer than kMr (decode: one token): each row against NP panels at once over all of
// k, two accumulators per panel. Each output is the tile's chain of FMAs in k order, from y or
// zero (a K chunk's store and reload in the tile is exact), so the bits are the tile's.
template <size_t NP>
__attribute__((target("avx2,fma"))) void RowPanelsAvx2(const float* x, const PackedMatrix& w, size_t p,
                                                       size_t k_end, float* y, size_t n_end, bool load) {
  alignas(32) float buf[NP * kPanel] = {};
  __m256 c[2 * NP];
  for (size_t i = 0; i < NP; ++i) {
    const size_t col0 = (p + i) * kPanel, cols = std::min(kPanel, n_end - col0);
    if (load) std::memcpy(buf + i * kPanel, y + col0, cols * sizeof(float));
    c[2 * i] = _mm256_load_ps(buf + i * kPanel);
    c[2 * i + 1] = _mm256_load_ps(buf + i * kPanel + 8);
  }
  const float* panels[NP];
  for (size_t i = 0; i < NP; ++i) panels[i] = w.panel(p + i);
  for (size_t kk = 0; kk < k_end; ++kk) {
    const __m256 a = _mm256_broadcast_ss(x + kk);
    for (size_t i = 0; i < NP; ++i) {
      c[2 * i] = _mm256_fmadd_ps(a, _mm256_load_ps(panels[i] + kk * kPanel), c[2 * i]);
      c[2 * i + 1] = _mm256_fmadd_ps(a, _mm256_load_ps(panels[i] + kk * kPanel + 8), c[2 * i + 1]);
    }
  }
  for (size_t i = 0; i < NP; ++i) {
    const size_t col0 = (p + i) * kPanel, cols = std::min(kPanel, n_end - col0);
    _mm256_store_ps(buf + i * kPanel, c[2 * i]);
    _mm256_store_ps(buf + i * kPanel + 8, c[2 * i + 1]);
    std::memcpy(y + col0, buf + i * kPanel, cols * sizeof(float));
  }
}

void RowsAvx2(const float* x, size_t rows, size_t ldx, const PackedMatrix& w, float* y, size_t ldy,
              bool load, size_t p0, size_t p1, size_t n_end, size_t k_end) {
  for (size_t r = 0; r < rows; ++r) {
    size_t p = p0;
    for (; p + 4 <= p1; p += 4) RowPanelsAvx2<4>(x + r * ldx, w, p, k_end, y + r * ldy, n_end, load);
    for (; p < p1; ++p) RowPanelsAvx2<1>(x + r * ldx, w, p, k_end, y + r * ldy, n_end, load);
  }
}

bool DetectAvx2() {
  if (std::getenv("EQUARX_GEMMA3_SCALAR")) return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
const bool kAvx2 = DetectAvx2();

void FreeAligned(float* p) { std::free(p); }

// Panels [p0, p1) of w, all rows of x.
void GemmPanels(const float* x, size_t rows, size_t ldx, const PackedMatrix& w, float* y,
                size_t ldy, bool accumulate, size_t p0, size_t p1, size_t n_end, size_t k_end) {
  if (kAvx2 && rows < kMr) return RowsAvx2(x, rows, ldx, w, y, ldy, accumulate, p0, p1, n_end, k_end);
  auto tile = kAvx2 ? TileAvx2 : TileScalar;
  for (size_t k0 = 0; k0 < k_end; k0 += kKc) {
    size_t k1 = std::min(k_end, k0 + kKc);
    bool load = accumulate || k0 > 0;
    for (size_t p = p0; p < p1; ++p) {
      size_t col0 = p * kPanel;
      size_t cols = std::min(kPanel, n_end - col0);
      const float* panel = w.panel(p);
      for (size_t r0 = 0; r0 < rows; r0 += kMr) {
        size_t nr = std::min(kMr, rows - r0);
        tile(x + r0 * ldx, ldx, nr, panel, k0, k1, y + r0 * ldy + col0, ldy, cols, load);
      }
    }
  }
}

}  // namespace

bool GemmUsesAvx2() { return kAvx2; }

bool PackedAlloc(size_t n, size_t k, PackedMatrix* out, bool zero) {
  *out = PackedMatrix{};
  const size_t panels = (n + kPanel - 1) / kPanel, limit = (SIZE_MAX - 64) / (kPanel * sizeof(float));
  if (k && panels > limit / k) return false;
  size_t bytes = panels * k * kPanel * sizeof(float);
  bytes = bytes ? (bytes + 63) / 64 * 64 : 64;
  float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) return false;
  if (zero) std::memset(p, 0, bytes);
  out->n = n;
  out->k = k;
  out->panels = panels;
  out->data = std::unique_ptr<float[], void (*)(float*)>(p, FreeAligned);
  return true;
}

void SetOutputRow(PackedMatrix* w, size_t j, const float* row) {
  float* dst = w->panel(j / kPanel) + j % kPanel;
  for (size_t kk = 0; kk < w->k; ++kk) dst[kk * kPanel] = row[kk];
}

void SetInput(PackedMatrix* w, size_t kk, const float* col) {
  for (size_t p = 0; p < w->panels; ++p) {
    const size_t col0 = p * kPanel, cols = std::min(kPanel, w->n - col0);
    std::memcpy(w->panel(p) + kk * kPanel, col + col0, cols * sizeof(float));
  }
}

void PackRows(const float* w, size_t n, size_t k, size_t ld, PackedMatrix* out) {
  if (!PackedAlloc(n, k, out, true)) throw std::bad_alloc();
  for (size_t j = 0; j < n; ++j) SetOutputRow(out, j, w + j * ld);
}

void PackCols(const float* b, size_t k, size_t n, size_t ld, PackedMatrix* out) {
  if (!PackedAlloc(n, k, out, true)) throw std::bad_alloc();
  for (size_t kk = 0; kk < k; ++kk) SetInput(out, kk, b + kk * ld);
}

PackedMatrix OutputsFrom(const PackedMatrix& w, size_t n0) {
  PackedMatrix v;
  v.n = w.n - n0;
  v.k = w.k;
  v.panels = w.panels - n0 / kPanel;
  v.data = std::unique_ptr<float[], void (*)(float*)>(w.panel(n0 / kPanel), [](float*) {});
  return v;
}

PackedMatrix InputsFrom(const PackedMatrix& w, size_t k0) {
  PackedMatrix v;
  v.n = w.n;
  v.k = w.k;  // the panel stride; the caller limits k_end to w.k - k0
  v.panels = w.panels;
  v.data = std::unique_ptr<float[], void (*)(float*)>(w.data.get() + k0 * kPanel, [](float*) {});
  return v;
}

void Gemm(const float* x, size_t rows, size_t ldx, const PackedMatrix& w, float* y, size_t ldy,
          int threads, bool accumulate, GemmRange range) {
  size_t n_end = std::min(range.n_end, w.n);
  size_t k_end = std::min(range.k_end, w.k);
  size_t panels = (n_end + kPanel - 1) / kPanel;
  if (rows == 0 || panels == 0) return;
  if (k_end == 0) {
    if (!accumulate)
      for (size_t r = 0; r < rows; ++r) std::memset(y + r * ldy, 0, n_end * sizeof(float));
    return;
  }
  ParallelFor(panels, threads, [&](size_t p0, size_t p1) {
    GemmPanels(x, rows, ldx, w, y, ldy, accumulate, p0, p1, n_end, k_end);
  });
}

size_t ParallelChunks(size_t n, int threads) {
  return std::min(static_cast<size_t>(std::max(1, threads)), n);
}

namespace {

// The helper threads of one calling thread (thread_local: in-process ranks each have their
// own), started on first need and kept: a call wakes them instead of starting threads, and
// allocates nothing once they exist. Helper w runs chunk w of every call that has more than w
// chunks; the caller runs chunk 0 and returns when every helper it woke is done.
class Helpers {
 public:
  using Fn = void (*)(void*, size_t, size_t, size_t);
  ~Helpers() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& th : threads_) th.join();
  }
  void Run(size_t t, size_t n, void* ctx, Fn fn) {
    while (threads_.size() < t - 1) {
      const size_t w = threads_.size() + 1;
      threads_.emplace_back([this, w] { Loop(w); });
    }
    {
      std::lock_guard<std::mutex> lk(m_);
      t_ = t, n_ = n, ctx_ = ctx, fn_ = fn;
      pending_ = t - 1;
      ++generation_;
    }
    start_.notify_all();
    fn(ctx, 0, 0, n / t);
    std::unique_lock<std::mutex> lk(m_);
    done_.wait(lk, [this] { return pending_ == 0; });
  }

 private:
  void Loop(size_t w) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      start_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (w >= t_) continue;  // not needed by this call
      const size_t t = t_, n = n_;
      void* ctx = ctx_;
      const Fn fn = fn_;
      lk.unlock();
      fn(ctx, w, n * w / t, n * (w + 1) / t);
      lk.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }
  std::mutex m_;
  std::condition_variable start_, done_;
  std::vector<std::thread> threads_;
  uint64_t generation_ = 0;
  size_t pending_ = 0, t_ = 0, n_ = 0;
  void* ctx_ = nullptr;
  Fn fn_ = nullptr;
  bool stop_ = false;
};

}  // namespace

void ParallelForImpl(size_t n, int threads, void* ctx, void (*fn)(void*, size_t, size_t, size_t)) {
  const size_t t = ParallelChunks(n, threads);
  if (t <= 1) {
    if (n) fn(ctx, 0, 0, n);
    return;
  }
  thread_local Helpers helpers;
  helpers.Run(t, n, ctx, fn);
}

}  // namespace gemma3
