// mpi_runner.cc — see mpi_runner.h.
#include "mpi_runner.h"

#include <algorithm>
#include <cstdlib>

#ifdef EQUARX_HAVE_MPI
#include <mpi.h>

#include "dequant.h"
#include "job.h"
#include "stats.h"
#endif

namespace gemma3 {

#ifdef EQUARX_HAVE_MPI

// MPI's own steps end the job rather than wait forever on a stopped rank (tools/common/job.h).
using equarx::tools::MpiAllreduce;

namespace {

// MPI_Allreduce's user op for bf16 values (MPI has no bf16 type): each pair widened to f32,
// added, rounded to bf16 (nearest even), as equarx's unquantized bf16 ring adds at each hop.
void Bf16Sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = FloatToBFloat16(BFloat16ToFloat(a[i]) + BFloat16ToFloat(b[i]));
}

// The Open MPI baseline: the same calls of the same counts and element sizes as equarx's.
// Plain blocking MPI_Allreduce, as a user of MPI calls it (no deadline).
Reducer MakeMpiReducer(bool bf16) {
  if (!bf16)
    return [](float* buf, size_t n) {
      return MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
             MPI_SUCCESS;
    };
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(Bf16Sum, /*commute=*/1, &o);
    return o;
  }();
  auto scratch = std::make_shared<std::vector<uint16_t>>();
  return [scratch](float* buf, size_t n) {
    scratch->resize(n);
    for (size_t i = 0; i < n; ++i) (*scratch)[i] = FloatToBFloat16(buf[i]);
    const int rc = MPI_Allreduce(MPI_IN_PLACE, scratch->data(), static_cast<int>(n), MPI_UINT16_T, op, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; ++i) buf[i] = BFloat16ToFloat((*scratch)[i]);
    return rc == MPI_SUCCESS;
  };
}

// After a local step that may take any time (loading): ok if every rank succeeded, else this
// rank's failure (named by rank) or a remote error. Plain MPI: no deadline fits unbounded local
// work.
equarx::Status AllRanksOk(const equarx::Status& mine, int rank, const char* what) {
  int local = mine.ok() ? 1 : 0, all = 0;
  MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all) return equarx::Status::Ok();
  return mine.ok() ? equarx::RemoteError(std::string(what) + " failed on another rank")
                   : equarx::Status(mine.code(), "rank " + std::to_string(rank) + ": " + mine.message());
}

}  // namespace

bool RootVerdict(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return v != 0;
}

Reducer MpiRunner::MakeRankReducer(const ReduceConfig& rc, equarx::Status* why) {
  return rc.mpi_allreduce ? MakeMpiReducer(rc.bf16) : MakeReducer(&world_->comm(), rc, why);
}

equarx::Status MpiRunner::Load(const GgufFile& file, const Config& config, int threads,
                               equarx::tools::World* world) {
  file_ = &file;
  world_ = world;
  rank_ = world->rank();
  size_ = world->size();
  if (threads <= 0) {
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const int on_host = local ? std::max(1, std::atoi(local)) : 1;
    threads = std::max(1, HardwareThreads() / on_host);
  }
  threads_ = threads;
  model_ = std::make_unique<RankModel>();
  EQUARX_RETURN_IF_ERROR(AllRanksOk(model_->Load(file, config, rank_, size_), rank_, "model load"));
  transport_ = world->transport();
  return equarx::Status::Ok();
}

equarx::Status MpiRunner::LoadHead() {
  head_ = std::make_unique<LmHead>();
  size_t v0, v1;
  VocabSlice(model_->config().vocab, rank_, size_, &v0, &v1);
  EQUARX_RETURN_IF_ERROR(
      AllRanksOk(head_->LoadSlice(*file_, model_->config(), v0, v1, threads_), rank_, "LM head load"));
  gen_ = std::make_unique<RankGenerator>(*model_, *head_, threads_);
  return equarx::Status::Ok();
}

equarx::Status MpiRunner::Generate(const std::vector<int32_t>& prompt, size_t new_tokens,
                                   const ReduceConfig& rc, bool warmup, GenerateResult* out) {
  if (!gen_) return equarx::Internal("Generate before LoadHead");
  equarx::Status why;
  const Reducer red = MakeRankReducer(rc, &why);
  const Exchange exchange = [this](double* v, size_t n) {
    equarx::tools::EndJobIfFailed(world_->comm());  // before MPI waits on a broken group
    world_->SumInPlace(v, n);
    return true;
  };
  world_->Barrier();  // every rank starts together
  equarx::Status st = gen_->Run(prompt, new_tokens, red, exchange, out, warmup);
  if (!st.ok() && !why.ok()) st = equarx::Status(st.code(), st.message() + " (" + why.message() + ")");
  return st;
}

equarx::Status MpiRunner::Forward(const std::vector<int32_t>& tokens, const ReduceConfig& rc,
                                  std::vector<float>* hidden, RunStats* stats) {
  const size_t T = tokens.size(), d = static_cast<size_t>(model_->config().d_model);
  hidden->assign(T * d, 0.0f);
  equarx::Status why;
  Reducer red = MakeRankReducer(rc, &why);
  ForwardStats fs;
  world_->Barrier();  // every rank starts the pass together
  int ok = model_->Forward(tokens.data(), T, red, threads_, hidden->data(), &fs) ? 1 : 0, all_ok = 0;
  equarx::tools::EndJobIfFailed(world_->comm());  // before MPI waits on a broken group
  MpiAllreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (!why.ok()) return why;
    return equarx::RemoteError(ok ? "forward failed on another rank"
                                  : "forward failed on rank " + std::to_string(rank_));
  }
  if (stats) {
    double maxes[3] = {fs.total_s, fs.reduce_s, fs.flops}, sums[3] = {maxes[0], maxes[1], maxes[2]};
    world_->MaxInPlace(maxes, 3);
    world_->SumInPlace(sums, 3);
    uint64_t h = equarx::tools::Fnv1a64(hidden->data(), hidden->size() * sizeof(float)), hmin = 0, hmax = 0;
    MpiAllreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MpiAllreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    RunStats s;
    s.total_s = maxes[0];
    s.reduce_s = sums[1] / size_;
    s.gflops = s.total_s > 0 ? sums[2] / s.total_s * 1e-9 : 0;
    s.ranks_agree = hmin == hmax;
    *stats = s;
  }
  return equarx::Status::Ok();
}

#else  // !EQUARX_HAVE_MPI

equarx::Status MpiRunner::Load(const GgufFile&, const Config&, int, equarx::tools::World*) {
  return equarx::Unsupported("this build of equarx-gemma3 has no MPI (configure with EQUARX_ENABLE_MPI=ON)");
}

equarx::Status MpiRunner::Forward(const std::vector<int32_t>&, const ReduceConfig&, std::vector<float>*,
                                  RunStats*) {
  return equarx::Unsupported("no MPI");
}

bool RootVerdict(bool ok) { return ok; }

equarx::Status MpiRunner::LoadHead() { return equarx::Unsupported("no MPI"); }

equarx::Status MpiRunner::Generate(const std::vector<int32_t>&, size_t, const ReduceConfig&, bool, GenerateResult*) {
  return equarx::Unsupported("this build of equarx-gemma3 has no MPI");
}

#endif

}  // namespace gemma3
