// runner.cc — reducers over equarx communicators and the in-process TP runner.
#include "runner.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "dequant.h"
#include "npy.h"

namespace gemma3 {

int HardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

std::string ReduceConfig::Name() const {
  if (mpi_allreduce) return bf16 ? "MPI_Allreduce (bf16 in)" : "MPI_Allreduce (f32 in)";
  std::string s(equarx::AlgorithmName(options.algorithm));
  if (equarx::TakesCodec(options.algorithm)) {
    s.append(" ").append(equarx::PhasesName(options.phases)).append(" ");
    s.append(equarx::CodecName(options.codec)).append(" B").append(std::to_string(options.block));
  }
  // The rotation as it runs (default resolves per codec; the ring only rotates when asked).
  equarx::Rotation r = options.rotation;
  if (r == equarx::Rotation::kDefault)
    r = equarx::TakesCodec(options.algorithm) ? equarx::DefaultRotation(options.codec)
                                               : equarx::Rotation::kNone;
  if (r == equarx::Rotation::kHadamard) s += " hadamard";
  if (options.scale != equarx::ScaleFormat::kF32)
    s += " " + std::string(equarx::ScaleFormatName(options.scale)) + "-scale";
  if (options.rounding == equarx::Rounding::kStochastic) s += " sr";
  s += bf16 ? " (bf16 in)" : " (f32 in)";
  return s;
}

namespace {

// Writes one AllReduce operand: PREFIX L<layer>_<attn|mlp>_rank<r>.npy, f32, 1-D (T * d).
bool DumpOperand(const ReduceConfig& rc, int call, int rank, const float* buf, size_t n, std::string* error) {
  const int layer = call / 2;
  if (!rc.dump_layers.empty() &&
      std::find(rc.dump_layers.begin(), rc.dump_layers.end(), layer) == rc.dump_layers.end())
    return true;
  equarx::tools::NpyArray a;
  a.dtype = equarx::tools::NpyDType::kFloat32;
  a.shape = {n};
  a.f32.assign(buf, buf + n);
  const std::string path = rc.dump_prefix + "L" + std::to_string(layer) + (call % 2 ? "_mlp" : "_attn") +
                           "_rank" + std::to_string(rank) + ".npy";
  if (equarx::Status st = equarx::tools::WriteNpy(path, a); !st.ok()) {
    if (error) *error = st.message();
    return false;
  }
  return true;
}

}  // namespace

Reducer MakeReducer(equarx::Communicator* comm, const ReduceConfig& rc, std::string* error) {
  if (!comm || comm->size() == 1) return [](float*, size_t) { return true; };
  auto scratch = std::make_shared<std::vector<uint16_t>>();
  auto calls = std::make_shared<int>(0);
  auto err = error;
  return [comm, rc, scratch, calls, err](float* buf, size_t n) {
    if (!rc.dump_prefix.empty() && !DumpOperand(rc, (*calls)++, comm->rank(), buf, n,
                                                comm->rank() == 0 ? err : nullptr))
      return false;
    equarx::Status st;
    if (rc.bf16) {
      scratch->resize(n);
      for (size_t i = 0; i < n; ++i) (*scratch)[i] = FloatToBFloat16(buf[i]);
      st = comm->AllReduce(scratch->data(), scratch->data(), n, equarx::DType::kBFloat16, rc.options);
      for (size_t i = 0; i < n; ++i) buf[i] = BFloat16ToFloat((*scratch)[i]);
    } else {
      st = comm->AllReduce(buf, buf, n, equarx::DType::kFloat32, rc.options);
    }
    if (!st.ok()) {
      if (err && comm->rank() == 0) *err = "AllReduce failed: " + st.ToString();
      return false;
    }
    return true;
  };
}

bool OnRankThreads(int n, const std::function<bool(int rank, std::string* error)>& fn, std::string* error) {
  std::vector<std::string> errs(n);
  std::vector<char> ok(n, 0);
  std::vector<std::thread> th;
  for (int r = 0; r < n; ++r) th.emplace_back([&, r] { ok[r] = fn(r, &errs[r]); });
  for (auto& t : th) t.join();
  for (int r = 0; r < n; ++r)
    if (!ok[r]) { *error = errs[r]; return false; }
  return true;
}

void VocabSlice(int vocab, int rank, int ranks, size_t* v0, size_t* v1) {
  *v0 = static_cast<size_t>(vocab) * rank / ranks;
  *v1 = static_cast<size_t>(vocab) * (rank + 1) / ranks;
}

bool InProcessRunner::Load(const GgufFile& file, const Config& config, int ranks,
                           std::string* error) {
  file_ = &file;
  models_.clear();
  comms_.clear();
  heads_.clear();
  gens_.clear();
  models_.resize(ranks);
  for (auto& m : models_) m = std::make_unique<RankModel>();
  if (!OnRankThreads(ranks, [&](int r, std::string* e) { return models_[r]->Load(file, config, r, ranks, e); },
                     error))
    return false;
  if (ranks > 1) {
    equarx::Status st = equarx::CreateInProcessGroup(ranks, &comms_);
    if (!st.ok()) { *error = "CreateInProcessGroup: " + st.ToString(); return false; }
  }
  return true;
}

bool InProcessRunner::LoadHead(std::string* error) {
  const int n = ranks();
  heads_.resize(n);
  gens_.resize(n);
  const int threads = threads_per_rank();
  return OnRankThreads(n, [&](int r, std::string* e) {
    heads_[r] = std::make_unique<LmHead>();
    size_t v0, v1;
    VocabSlice(models_[r]->config().vocab, r, n, &v0, &v1);
    if (!heads_[r]->LoadSlice(*file_, models_[r]->config(), v0, v1, threads, e)) return false;
    gens_[r] = std::make_unique<RankGenerator>(*models_[r], *heads_[r], threads);
    return true;
  }, error);
}

equarx::Status InProcessRunner::Generate(const std::vector<int32_t>& prompt, size_t new_tokens,
                                         const ReduceConfig& rc, bool warmup, GenerateResult* out) {
  return Generate(prompt, new_tokens, rc, nullptr, out, warmup);
}

equarx::Status InProcessRunner::Generate(const std::vector<int32_t>& prompt, size_t new_tokens,
                                         const ReduceConfig& rc, const ReducerFactory& make,
                                         GenerateResult* out, bool warmup) {
  if (rc.mpi_allreduce)
    return equarx::InvalidArgument("MPI_Allreduce sums need one rank per process: run under mpirun");
  if (gens_.size() != models_.size()) return equarx::Internal("Generate before LoadHead");
  const int n = ranks();
  std::vector<equarx::Status> st(n);
  std::vector<std::string> errs(n);
  std::vector<GenerateResult> res(n);
  const equarx::Status group = equarx::tools::RunInProcess(n, [&](equarx::tools::World& w) {
    const int r = w.rank();
    const Reducer red = make ? make(w) : MakeReducer(n > 1 ? &w.comm() : nullptr, rc, &errs[r]);
    const Exchange exchange = [&w](double* v, size_t count) {
      w.SumInPlace(v, count);
      return true;
    };
    st[r] = gens_[r]->Run(prompt, new_tokens, red, exchange, &res[r], warmup);
  });
  if (!group.ok()) return group;
  for (int r = 0; r < n; ++r)
    if (!st[r].ok())
      return errs[r].empty() ? st[r] : equarx::Status(st[r].code(), st[r].message() + " (" + errs[r] + ")");
  *out = std::move(res[0]);
  return equarx::Status::Ok();
}

int InProcessRunner::threads_per_rank() const {
  return std::max(1, HardwareThreads() / std::max(1, ranks()));
}

bool InProcessRunner::Forward(const std::vector<int32_t>& tokens, const ReduceConfig& rc,
                              std::vector<float>* hidden, RunStats* stats, std::string* error) {
  if (rc.mpi_allreduce) { *error = "MPI_Allreduce sums need one rank per process: run under mpirun"; return false; }
  const int n = ranks();
  const size_t T = tokens.size(), d = models_[0]->config().d_model;
  std::vector<std::vector<float>> outs(n, std::vector<float>(T * d));
  std::vector<ForwardStats> fs(n);
  std::vector<char> ok(n, 0);
  std::vector<std::string> errs(n);
  const int threads = threads_per_rank();
  auto body = [&](int r) {
    Reducer red = MakeReducer(n > 1 ? comms_[r].get() : nullptr, rc, &errs[r]);
    ok[r] = models_[r]->Forward(tokens.data(), T, red, threads, outs[r].data(), &fs[r]);
  };
  if (n == 1) {
    body(0);
  } else {
    std::vector<std::thread> th;
    for (int r = 0; r < n; ++r) th.emplace_back(body, r);
    for (auto& t : th) t.join();
  }
  for (int r = 0; r < n; ++r)
    if (!ok[r]) { *error = errs[r].empty() ? "forward failed on rank " + std::to_string(r) : errs[r]; return false; }
  if (stats) {
    RunStats s;
    double flops = 0;
    for (int r = 0; r < n; ++r) {
      s.total_s = std::max(s.total_s, fs[r].total_s);
      s.reduce_s += fs[r].reduce_s / n;
      flops += fs[r].flops;
      if (r > 0 && std::memcmp(outs[r].data(), outs[0].data(), T * d * sizeof(float)) != 0)
        s.ranks_agree = false;
    }
    s.gflops = s.total_s > 0 ? flops / s.total_s * 1e-9 : 0;
    *stats = s;
  }
  *hidden = std::move(outs[0]);
  return true;
}

}  // namespace gemma3
