// Codec kernel throughput, in GB/s of f32-equivalent input (SetBytesProcessed = n * 4), next
// to memcpy of the same n f32 values, for L2-resident microshards and a large (64 MiB)
// buffer. Kernels: int8 block (B = 64, 128) Encode / Decode / DecodeAccumulate /
// DecodeAccumulateEncode with f32 or bf16 local data, and at B = 128 with bf16 and two-level
// scales; raw bf16 Encode / Decode; the other block formats (int6, int5, int4, fp8 e4m3,
// fp8 e5m2) and int8 with stochastic rounding or telemetry at B = 128; the rotation at blocks 64, 128 and 16.
// Threads: int8 Encode and DecodeAccumulateEncode of the 64 MiB buffer cut into T parts
// (codec::PartOf) on a worker pool of T threads, as a call with option threads = T runs its
// kernels (wall-clock time; arguments {n, T}).
//
//   equarx_codec_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Arguments of every benchmark: {n elements}. The SIMD target is the dispatched best one
// (printed in the context); pass --simd_target=NAME (e.g. SSE4, EMU128) to force another.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <cstring>
#include <random>
#include <vector>

#include "codec/codec.h"
#include "common/worker_pool.h"

namespace equarx::codec {
namespace {

constexpr int64_t kL2Small = 16 * 1024;          // 64 KiB of f32
constexpr int64_t kL2Large = 64 * 1024;          // 256 KiB of f32
constexpr int64_t kBig = 16 * 1024 * 1024;       // 64 MiB of f32

struct Buffers {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  std::vector<uint8_t> wire, wire_out;
  std::vector<float> out;
  Buffers(size_t n, WireSpec spec) : f32(n), bf16(n), out(n) {
    std::mt19937 rng(42);
    std::normal_distribution<float> nd;
    for (float& v : f32) v = nd(rng);
    ref::Convert(DType::kFloat32, f32.data(), n, DType::kBFloat16, bf16.data());
    wire.resize(WireBytes(spec, n));
    wire_out.resize(wire.size());
    Encode(spec, DType::kFloat32, f32.data(), n, wire.data());
  }
  const void* Local(DType t) const {
    return t == DType::kFloat32 ? static_cast<const void*>(f32.data()) : bf16.data();
  }
};

void Finish(benchmark::State& state, size_t n) {
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n) * 4);
}

// The timed loop of every kernel: `body` once per iteration, its output `out` kept alive.
template <class Body>
void TimeLoop(benchmark::State& state, size_t n, const void* out, Body body) {
  for (auto _ : state) {
    body();
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  Finish(state, n);
}

void BM_Memcpy(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  std::vector<float> a(n, 1.0f), b(n);
  TimeLoop(state, n, b.data(), [&] {
    std::memcpy(b.data(), a.data(), n * 4);
  });
}

// The kernels timed: the encoding ones write wire_out, the others out.
enum class Kernel { kEncode, kDecode, kDecodeAccumulate, kDecodeAccumulateEncode };

// Kernel kK of `spec` on n (the benchmark's argument) values with local data of dtype kT (f32
// for kDecode, which decodes into out); `stats`: the encoding kernels' EncodeStats out-param
// (null: none, the plain kernel).
template <Kernel kK, DType kT>
void TimeKernel(benchmark::State& state, const WireSpec& spec, EncodeStats* stats = nullptr) {
  const size_t n = size_t(state.range(0));
  Buffers buf(n, spec);
  const void* local = buf.Local(kT);
  const uint8_t* wire = buf.wire.data();
  uint8_t* wire_out = buf.wire_out.data();
  float* out = buf.out.data();
  constexpr bool kEncodes = kK == Kernel::kEncode || kK == Kernel::kDecodeAccumulateEncode;
  TimeLoop(state, n, kEncodes ? static_cast<const void*>(wire_out) : out, [&] {
    if constexpr (kK == Kernel::kEncode) Encode(spec, kT, local, n, wire_out, stats);
    else if constexpr (kK == Kernel::kDecode) Decode(spec, wire, n, DType::kFloat32, out);
    else if constexpr (kK == Kernel::kDecodeAccumulate) DecodeAccumulate(spec, wire, n, kT, local, out);
    else DecodeAccumulateEncode(spec, wire, n, kT, local, wire_out, stats);
  });
}

// int8 block at block kB with scale storage kScale.
template <Kernel kK, uint32_t kB, DType kT, uint8_t kScale>
void BM_Int8(benchmark::State& state) {
  WireSpec spec{Format::kInt8Block, kB};
  spec.scale = kScale;
  TimeKernel<kK, kT>(state, spec);
}

// Any block format / rounding at B = 128, f32 data; kStats: with an EncodeStats out-param.
template <Kernel kK, Format kF, uint8_t kRounding, bool kStats>
void BM_Block(benchmark::State& state) {
  EncodeStats st;
  TimeKernel<kK, DType::kFloat32>(state, WireSpec{kF, 128, kRounding, 1, 2, 0}, kStats ? &st : nullptr);
}

template <Kernel kK>
void BM_RawBF16(benchmark::State& state) {
  TimeKernel<kK, DType::kFloat32>(state, WireSpec{Format::kRawBF16, 0});
}

// The names the kernels are registered and listed under (BENCHMARK names a benchmark by the
// text of its argument).
template <uint32_t kB, DType kT, uint8_t kScale = kScaleF32>
constexpr auto& BM_Int8Encode = BM_Int8<Kernel::kEncode, kB, kT, kScale>;
template <uint32_t kB, uint8_t kScale = kScaleF32>
constexpr auto& BM_Int8Decode = BM_Int8<Kernel::kDecode, kB, DType::kFloat32, kScale>;
template <uint32_t kB, DType kT, uint8_t kScale = kScaleF32>
constexpr auto& BM_Int8DecodeAccumulate = BM_Int8<Kernel::kDecodeAccumulate, kB, kT, kScale>;
template <uint32_t kB, DType kT, uint8_t kScale = kScaleF32>
constexpr auto& BM_Int8DecodeAccumulateEncode =
    BM_Int8<Kernel::kDecodeAccumulateEncode, kB, kT, kScale>;
template <Format kF, uint8_t kRounding, bool kStats>
constexpr auto& BM_BlockEncode = BM_Block<Kernel::kEncode, kF, kRounding, kStats>;
template <Format kF, uint8_t kRounding, bool kStats>
constexpr auto& BM_BlockDecodeAccumulateEncode =
    BM_Block<Kernel::kDecodeAccumulateEncode, kF, kRounding, kStats>;
constexpr auto& BM_RawBF16Encode = BM_RawBF16<Kernel::kEncode>;
constexpr auto& BM_RawBF16Decode = BM_RawBF16<Kernel::kDecode>;

// memcpy of n f32 on T threads, each copying its 1/T: what the memory gives T cores.
void BM_MemcpyThreads(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  const int threads = int(state.range(1));
  std::vector<float> a(n, 1.0f), b(n);
  common::WorkerPool pool(threads);
  TimeLoop(state, n, b.data(), [&] {
    pool.Run(size_t(threads), [&](size_t i) {
      const size_t lo = i * n / size_t(threads), hi = (i + 1) * n / size_t(threads);
      std::memcpy(b.data() + lo, a.data() + lo, (hi - lo) * 4);
    });
  });
  state.counters["threads"] = threads;
}

// The codec on T threads: the segment cut into T parts on block boundaries, each part's kernel
// on its own slice of the same wire image (what CallIo does with option threads = T).
template <uint32_t kB, DType kT, bool kDae>
void BM_Int8Threads(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  const int threads = int(state.range(1));
  const WireSpec spec{Format::kInt8Block, kB};
  Buffers buf(n, spec);
  common::WorkerPool pool(threads);
  const size_t nb = (n + kB - 1) / kB;
  TimeLoop(state, n, buf.wire_out.data(), [&] {
    pool.Run(size_t(threads), [&](size_t i) {
      const size_t b = i * nb / size_t(threads) * kB, e = std::min(n, (i + 1) * nb / size_t(threads) * kB);
      if (e <= b) return;
      const WirePart p = PartOf(spec, n, b);
      const auto* local = static_cast<const uint8_t*>(buf.Local(kT)) + b * DTypeSize(kT);
      if (kDae)
        DecodeAccumulateEncode(p.spec, buf.wire.data() + p.wire_at, e - b, kT, local,
                               buf.wire_out.data() + p.wire_at);
      else
        Encode(p.spec, kT, local, e - b, buf.wire_out.data() + p.wire_at);
    });
  });
  state.counters["threads"] = threads;
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Arg(kL2Small)->Arg(kL2Large)->Arg(kBig);
}

constexpr DType F32 = DType::kFloat32;
constexpr DType BF16 = DType::kBFloat16;

// The rotation (rotation = hadamard): forward from the caller's dtype into f32, inverse from
// f32 into the dtype, at the rotation block kB.
template <uint32_t kB, DType kT>
void BM_RotateForward(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Buffers buf(n, WireSpec{Format::kInt8Block, kB});
  TimeLoop(state, n, buf.out.data(), [&] {
    RotateForward(RotationSpec{kB, 1}, kT, buf.Local(kT), n, 0, buf.out.data());
  });
}

template <uint32_t kB, DType kT>
void BM_RotateInverse(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  Buffers buf(n, WireSpec{Format::kInt8Block, kB});
  std::vector<uint8_t> dst(n * DTypeSize(kT));
  TimeLoop(state, n, dst.data(), [&] {
    RotateInverse(RotationSpec{kB, 1}, buf.f32.data(), n, 0, kT, dst.data());
  });
}

BENCHMARK(BM_Memcpy)->Apply(Sizes);
BENCHMARK(BM_Int8Encode<64, F32>)->Apply(Sizes);
BENCHMARK(BM_Int8Encode<128, F32>)->Apply(Sizes);
BENCHMARK(BM_Int8Encode<128, BF16>)->Apply(Sizes);
BENCHMARK(BM_Int8Decode<64>)->Apply(Sizes);
BENCHMARK(BM_Int8Decode<128>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulate<64, F32>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulate<128, F32>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulate<128, BF16>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulateEncode<64, F32>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulateEncode<128, F32>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulateEncode<64, BF16>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulateEncode<128, BF16>)->Apply(Sizes);
BENCHMARK(BM_RawBF16Encode)->Apply(Sizes);
// Scale storage at B = 128: bf16, and two levels (bf16 + a 4-bit multiplier per 8 elements).
constexpr uint8_t SBF16 = kScaleBF16;
constexpr uint8_t S2L = kScaleTwoLevel;
BENCHMARK(BM_Int8Encode<128, F32, SBF16>)->Apply(Sizes);
BENCHMARK(BM_Int8Encode<128, F32, S2L>)->Apply(Sizes);
BENCHMARK(BM_Int8Encode<128, BF16, S2L>)->Apply(Sizes);
BENCHMARK(BM_Int8Decode<128, S2L>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulate<128, F32, S2L>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulateEncode<128, F32, SBF16>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulateEncode<128, F32, S2L>)->Apply(Sizes);
BENCHMARK(BM_Int8DecodeAccumulateEncode<128, BF16, S2L>)->Apply(Sizes);
constexpr Format I8 = Format::kInt8Block, I6 = Format::kInt6Block, I5 = Format::kInt5Block;
constexpr Format I4 = Format::kInt4Block;
constexpr Format E4 = Format::kFp8E4M3Block, E5 = Format::kFp8E5M2Block;
constexpr uint8_t RNE = kRoundNearestEven, SR = kRoundStochastic;
BENCHMARK(BM_BlockEncode<I8, SR, false>)->Apply(Sizes);
BENCHMARK(BM_BlockEncode<I8, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockEncode<I8, RNE, true>)->Apply(Sizes);
BENCHMARK(BM_BlockEncode<I6, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockEncode<I5, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockEncode<I4, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockEncode<E4, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockEncode<E5, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockDecodeAccumulateEncode<I8, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockDecodeAccumulateEncode<I8, SR, false>)->Apply(Sizes);
BENCHMARK(BM_BlockDecodeAccumulateEncode<I6, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockDecodeAccumulateEncode<I5, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockDecodeAccumulateEncode<I4, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockDecodeAccumulateEncode<E4, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_BlockDecodeAccumulateEncode<E5, RNE, false>)->Apply(Sizes);
BENCHMARK(BM_RawBF16Decode)->Apply(Sizes);
BENCHMARK(BM_RotateForward<64, F32>)->Apply(Sizes);
BENCHMARK(BM_RotateForward<64, BF16>)->Apply(Sizes);
BENCHMARK(BM_RotateForward<128, BF16>)->Apply(Sizes);
BENCHMARK(BM_RotateInverse<64, F32>)->Apply(Sizes);
BENCHMARK(BM_RotateInverse<64, BF16>)->Apply(Sizes);
BENCHMARK(BM_RotateInverse<128, BF16>)->Apply(Sizes);
BENCHMARK(BM_RotateForward<16, BF16>)->Apply(Sizes);  // the rotation block of two-level scales
BENCHMARK(BM_RotateInverse<16, BF16>)->Apply(Sizes);
// The 64 MiB kernels on 1 and 2 threads (wall-clock).
void ThreadArgs(benchmark::internal::Benchmark* b) {
  b->Args({kBig, 1})->Args({kBig, 2})->UseRealTime();
}
BENCHMARK(BM_MemcpyThreads)->Apply(ThreadArgs);
BENCHMARK(BM_Int8Threads<64, F32, true>)->Apply(ThreadArgs);
BENCHMARK(BM_Int8Threads<128, F32, true>)->Apply(ThreadArgs);
BENCHMARK(BM_Int8Threads<128, BF16, true>)->Apply(ThreadArgs);
BENCHMARK(BM_Int8Threads<64, F32, false>)->Apply(ThreadArgs);
BENCHMARK(BM_Int8Threads<128, BF16, false>)->Apply(ThreadArgs);

}  // namespace
}  // namespace equarx::codec

int main(int argc, char** argv) {
  // Our own flag, removed before Google Benchmark parses the rest.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const char* kFlag = "--simd_target=";
    if (std::strncmp(argv[i], kFlag, std::strlen(kFlag)) == 0) {
      const std::string want = argv[i] + std::strlen(kFlag);
      bool found = false;
      for (int64_t t : equarx::codec::AvailableTargets()) {
        if (equarx::codec::TargetName(t) == want) {
          equarx::codec::ForceTarget(t);
          found = true;
        }
      }
      if (!found) {
        std::fprintf(stderr, "unknown or unsupported --simd_target=%s\n", want.c_str());
        return 1;
      }
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("simd_target",
                              equarx::codec::TargetName(equarx::codec::CurrentTarget()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
