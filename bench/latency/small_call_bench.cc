// equarx small-call bench — the pieces of one small AllReduce timed apart (Google Benchmark;
// docs/performance.md, "Small calls", where bench/small_calls.sh sets them beside whole calls):
//   BM_Resolve        the resolver (options, auto's table, plan, rotation) of a call on 4 ranks,
//                     warm (the table cached), as Communicator::AllReduce runs it per call;
//   BM_Describe       the descriptor a rank sends in the argument check;
//   BM_OneShotCodec   one rank's codec work in one_shot on 4 ranks: code its contribution,
//                     decode and add all 4 in f32, round the sum to the dtype (quantized: int8
//                     at the default scale format and block, with the rotation's forward and
//                     inverse; raw: the f32 copies);
//   BM_PingPong       one message there and back between two threads over the in-process,
//                     shared-memory or socket (loopback) transport, waits spinning
//                     (EQUARX_SPIN_US's default, 50 us) or sleeping at once: half a round trip
//                     is a message's one-way latency, wake-up included when not spinning.
#include <benchmark/benchmark.h>

#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "algo/resolve.h"
#include "codec/codec.h"
#include "core/validate.h"
#include "transport/inproc/inproc_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/socket/socket_transport.h"

namespace equarx {
namespace {

void BM_Resolve(benchmark::State& state) {
  const env::Settings env;
  algo::AutoTables tables(env);
  algo::Resolved r;
  AllReduceOptions o;  // auto
  const size_t count = size_t(state.range(0)) / 4;
  for (auto _ : state) {
    Status st = algo::Resolve({o, DType::kFloat32, count, 4}, env, &tables, &r);
    benchmark::DoNotOptimize(st);
    benchmark::DoNotOptimize(r.plan);
  }
  state.SetLabel(std::string(AlgorithmName(r.plan.algorithm)));
}
BENCHMARK(BM_Resolve)->Arg(16)->Arg(4096)->Arg(65536);

void BM_Describe(benchmark::State& state) {
  const AllReduceOptions o = algo::ResolveDefaults(AllReduceOptions{}, env::Settings{});
  for (auto _ : state) {
    core::Descriptor d = core::Describe(1024, DType::kFloat32, o, 1, core::RotationInput::kUnscanned, 0, Status::Ok());
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_Describe);

void BM_OneShotCodec(benchmark::State& state) {
  const size_t bytes = size_t(state.range(0)), n = bytes / 4;
  const bool quantized = state.range(1) != 0;
  constexpr int kRanks = 4;
  const AllReduceOptions d;  // the default call's codec
  const codec::WireSpec w = quantized ? algo::QuantizedWire(d.codec, BlockOf(d), d.rounding, 0, ScaleOf(d))
                                      : codec::WireSpec{codec::Format::kRawF32, 0};
  const codec::RotationSpec rot{uint32_t(RotationBlockOf(d)), 1, true};
  std::vector<float> x(n), tmp(n), acc(n), out(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(i % 17) - 8.0f;
  std::vector<uint8_t> wire(codec::WireBytes(w, n) * kRanks);
  for (auto _ : state) {
    const float* src = x.data();
    if (quantized) src = (codec::RotateForward(rot, DType::kFloat32, x.data(), n, 0, tmp.data()), tmp.data());
    codec::Encode(w, DType::kFloat32, src, n, wire.data());
    for (int q = 1; q < kRanks; ++q)  // the peers' wire images: copies of this one
      std::memcpy(wire.data() + q * codec::WireBytes(w, n), wire.data(), codec::WireBytes(w, n));
    codec::Decode(w, wire.data(), n, DType::kFloat32, acc.data());
    for (int q = 1; q < kRanks; ++q)
      codec::DecodeAccumulate(w, wire.data() + q * codec::WireBytes(w, n), n, DType::kFloat32, acc.data(), acc.data());
    if (quantized) benchmark::DoNotOptimize(codec::RotateInverse(rot, acc.data(), n, 0, DType::kFloat32, out.data()));
    else codec::Convert(DType::kFloat32, acc.data(), n, DType::kFloat32, out.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(quantized ? "int8 B" + std::to_string(BlockOf(d)) + " " + std::string(ScaleFormatName(ScaleOf(d))) +
                                 " + rotation"
                           : "raw f32");
}
BENCHMARK(BM_OneShotCodec)->ArgsProduct({{16, 1024, 4096, 16384, 65536}, {0, 1}});

// Two ranks of one transport, made on two threads over an in-memory all-gather.
std::vector<std::unique_ptr<transport::Transport>> Pair(int kind) {
  std::vector<std::unique_ptr<transport::Transport>> t(2);
  if (kind == 0) {
    auto fabric = transport::CreateInprocFabric(2);
    for (int r = 0; r < 2; ++r) t[size_t(r)] = transport::CreateInprocTransport(fabric, r);
    return t;
  }
  std::barrier<> sync(2);
  std::vector<uint8_t> board;
  auto gather = [&](int r) -> transport::AllGather {
    return [&, r](const void* mine, size_t bytes, void* all) {
      sync.arrive_and_wait();
      if (r == 0) board.assign(2 * bytes, 0);
      sync.arrive_and_wait();
      std::memcpy(board.data() + bytes * size_t(r), mine, bytes);
      sync.arrive_and_wait();
      std::memcpy(all, board.data(), 2 * bytes);
      sync.arrive_and_wait();
      return Status::Ok();
    };
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      const Status st = kind == 1 ? transport::CreateShmTransport(r, 2, gather(r), {}, &t[size_t(r)])
                                  : transport::CreateSocketTransport(r, 2, gather(r), {}, &t[size_t(r)]);
      if (!st.ok()) std::fprintf(stderr, "set-up: %s\n", st.ToString().c_str());
    });
  for (auto& th : threads) th.join();
  return t;
}

void BM_PingPong(benchmark::State& state) {
  const int kind = int(state.range(0));
  const size_t bytes = size_t(state.range(1));
  const auto spin = std::chrono::microseconds(state.range(2) ? 50 : 0);
  auto t = Pair(kind);
  if (!t[0] || !t[1]) {
    state.SkipWithError("transport set-up failed");
    return;
  }
  for (auto& x : t) x->SetSpin(spin);
  std::vector<uint8_t> a(bytes, 1), b(bytes);
  const auto far = transport::Clock::now() + std::chrono::hours(1);
  std::atomic<bool> stop{false};
  std::thread echo([&] {  // answers every message until `stop` is set before one arrives
    std::vector<uint8_t> buf(bytes);
    for (uint64_t tag = 0;; ++tag) {
      transport::Request r, s;
      if (!t[1]->Irecv(0, tag, buf.data(), bytes, &r).ok() || !t[1]->Wait(&r, far).ok()) return;
      if (stop.load()) return;
      if (!t[1]->Isend(0, tag, buf.data(), bytes, &s).ok() || !t[1]->Wait(&s, far).ok()) return;
    }
  });
  uint64_t tag = 0;
  for (auto _ : state) {
    transport::Request r, s;
    (void)t[0]->Irecv(1, tag, b.data(), bytes, &r);
    (void)t[0]->Isend(1, tag, a.data(), bytes, &s);
    (void)t[0]->Wait(&s, far);
    (void)t[0]->Wait(&r, far);
    ++tag;
  }
  stop.store(true);  // then one message the echo thread does not answer
  transport::Request s;
  (void)t[0]->Isend(1, tag, a.data(), bytes, &s);
  (void)t[0]->Wait(&s, far);
  echo.join();
  static const char* kNames[] = {"inproc", "shm", "socket"};
  state.SetLabel(std::string(kNames[kind]) + (state.range(2) ? " spin" : " sleep"));
  // Seconds per one-way message (a rate, inverted).
  state.counters["one_way"] = benchmark::Counter(double(state.iterations()) * 2,
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PingPong)->ArgsProduct({{0, 1, 2}, {16, 4096, 65536}, {0, 1}})->UseRealTime();

}  // namespace
}  // namespace equarx

BENCHMARK_MAIN();
