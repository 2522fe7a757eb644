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
  // The options as the call resolves them (the ring only rotates when asked).
  const equarx::AllReduceOptions o = equarx::ResolveOptions(options);
  std::string s(equarx::AlgorithmName(o.algorithm));
  if (equarx::TakesCodec(o.algorithm)) {
    s.append(" ").append(equarx::PhasesName(o.phases)).append(" ");
    s.append(equarx::CodecName(o.codec)).append(" B").append(std::to_string(o.block));
  }
  if (o.rotation == equarx::Rotation::kHadamard) s += " hadamard";
  if (equarx::TakesCodec(o.algorithm) && o.scale != equarx::ScaleFormat::kF32)
    s += " " + std::string(equarx::ScaleFormatName(o.scale)) + "-scale";
  if (o.rounding == equarx::Rounding::kStochastic) s += " sr";
  s += bf16 ? " (bf16 in)" : " (f32 in)";
  return s;
}

namespace {

// Writes one AllReduce operand: PREFIX L<layer>_<attn|mlp>_rank<r>.npy, f32, 1-D (T * d).
equarx::Status DumpOperand(const ReduceConfig& rc, int call, int rank, const float* buf, size_t n) {
  const int layer = call / 2;
  if (!rc.dump_layers.empty() &&
      std::find(rc.dump_layers.begin(), rc.dump_layers.end(), layer) == rc.dump_layers.end())
    return equarx::Status::Ok();
  equarx::tools::NpyArray a;
  a.dtype = equarx::tools::NpyDType::kFloat32;
  a.shape = {n};
  a.f32.assign(buf, buf + n);
  const std::string path = rc.dump_prefix + "L" + std::to_string(layer) + (call % 2 ? "_mlp" : "_attn") +
                           "_rank" + std::to_string(rank) + ".npy";
  return equarx::tools::WriteNpy(path, a);
}

}  // namespace

Reducer MakeReducer(equarx::Communicator* comm, const ReduceConfig& rc, equarx::Status* why) {
  if (!comm || comm->size() == 1) return [](float*, size_t) { return true; };
  auto scratch = std::make_shared<std::vector<uint16_t>>();
  auto calls = std::make_shared<int>(0);
  equarx::Status* const root_why = comm->rank() == 0 ? why : nullptr;
  return [comm, rc, scratch, calls, root_why](float* buf, size_t n) {
    if (!rc.dump_prefix.empty())
      if (equarx::Status st = DumpOperand(rc, (*calls)++, comm->rank(), buf, n); !st.ok()) {
        if (root_why) *root_why = st;
        return false;
      }
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
      if (root_why) *root_why = equarx::Status(st.code(), "AllReduce failed: " + st.ToString());
      return false;
    }
    return true;
  };
}

void VocabSlice(int vocab, int rank, int ranks, size_t* v0, size_t* v1) {
  *v0 = static_cast<size_t>(vocab) * rank / ranks;
  *v1 = static_cast<size_t>(vocab) * (rank + 1) / ranks;
}

equarx::Status InProcessRunner::Load(const GgufFile& file, const Config& config, int ranks) {
  file_ = &file;
  models_.clear();
  comms_.clear();
  heads_.clear();
  gens_.clear();
  models_.resize(ranks);
  for (auto& m : models_) m = std::make_unique<RankModel>();
  EQUARX_RETURN_IF_ERROR(equarx::tools::FirstFailure(equarx::tools::RunOnRanks(
      ranks, [&](int r) { return models_[r]->Load(file, config, r, ranks); })));
  if (ranks > 1) {
    equarx::Status st = equarx::CreateInProcessGroup(ranks, &comms_);
    if (!st.ok()) return equarx::Status(st.code(), "CreateInProcessGroup: " + st.ToString());
  }
  return equarx::Status::Ok();
}

equarx::Status InProcessRunner::LoadHead() {
  const int n = ranks();
  heads_.resize(n);
  gens_.resize(n);
  const int threads = threads_per_rank();
  return equarx::tools::FirstFailure(equarx::tools::RunOnRanks(n, [&](int r) {
    heads_[r] = std::make_unique<LmHead>();
    size_t v0, v1;
    VocabSlice(models_[r]->config().vocab, r, n, &v0, &v1);
    EQUARX_RETURN_IF_ERROR(heads_[r]->LoadSlice(*file_, models_[r]->config(), v0, v1, threads));
    gens_[r] = std::make_unique<RankGenerator>(*models_[r], *heads_[r], threads);
    return equarx::Status::Ok();
  }));
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
  std::vector<equarx::Status> st(n), why(n);
  std::vector<GenerateResult> res(n);
  const equarx::Status group = equarx::tools::RunInProcess(n, [&](equarx::tools::World& w) {
    const int r = w.rank();
    const Reducer red = make ? make(w) : MakeReducer(n > 1 ? &w.comm() : nullptr, rc, &why[r]);
    const Exchange exchange = [&w](double* v, size_t count) {
      w.SumInPlace(v, count);
      return true;
    };
    st[r] = gens_[r]->Run(prompt, new_tokens, red, exchange, &res[r], warmup);
  });
  if (!group.ok()) return group;
  for (int r = 0; r < n; ++r)
    if (!st[r].ok())
      return why[r].ok() ? st[r] : equarx::Status(st[r].code(), st[r].message() + " (" + why[r].message() + ")");
  *out = std::move(res[0]);
  return equarx::Status::Ok();
}

int InProcessRunner::threads_per_rank() const {
  return std::max(1, HardwareThreads() / std::max(1, ranks()));
}

equarx::Status InProcessRunner::Forward(const std::vector<int32_t>& tokens, const ReduceConfig& rc,
                                        std::vector<float>* hidden, RunStats* stats) {
  if (rc.mpi_allreduce)
    return equarx::InvalidArgument("MPI_Allreduce sums need one rank per process: run under mpirun");
  const int n = ranks();
  const size_t T = tokens.size(), d = models_[0]->config().d_model;
  std::vector<std::vector<float>> outs(n, std::vector<float>(T * d));
  std::vector<ForwardStats> fs(n);
  std::vector<equarx::Status> why(n);
  const int threads = threads_per_rank();
  auto body = [&](int r) {
    Reducer red = MakeReducer(n > 1 ? comms_[r].get() : nullptr, rc, &why[r]);
    if (models_[r]->Forward(tokens.data(), T, red, threads, outs[r].data(), &fs[r])) return equarx::Status::Ok();
    return why[r].ok() ? equarx::RemoteError("forward failed on rank " + std::to_string(r)) : why[r];
  };
  // One rank runs on this thread, which keeps its GEMM helpers (gemm.cc: thread_local) from
  // pass to pass; more run on the tools' launcher.
  EQUARX_RETURN_IF_ERROR(n == 1 ? body(0) : equarx::tools::FirstFailure(equarx::tools::RunOnRanks(n, body)));
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
  return equarx::Status::Ok();
}

}  // namespace gemma3
