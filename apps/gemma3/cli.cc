// cli.cc — see cli.h.
#include "cli.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "mpi_runner.h"

namespace gemma3 {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

namespace {

// The reduce configurations the flags ask for: the product of the option lists and dtypes,
// for the equarx backend; one per dtype for MPI_Allreduce (which takes no options). The app's
// default algorithm is the unquantized ring.
equarx::Status ReduceConfigs(const Args& a, std::vector<ReduceConfig>* out) {
  equarx::AllReduceOptions base;
  base.algorithm = equarx::Algorithm::kRing;
  std::vector<bool> bf16;
  for (const std::string& d : Split(a.dtypes, ',')) {
    if (d != "f32" && d != "bf16") return equarx::InvalidArgument("--dtype: expected f32 or bf16, got '" + d + "'");
    bf16.push_back(d == "bf16");
  }
  if (bf16.empty()) return equarx::InvalidArgument("--dtype is empty");
  std::vector<bool> mpi;
  for (const std::string& b : Split(a.allreduce, ',')) {
    if (b != "equarx" && b != "mpi")
      return equarx::InvalidArgument("--allreduce: expected equarx or mpi, got '" + b + "'");
    mpi.push_back(b == "mpi");
  }
  if (mpi.empty()) return equarx::InvalidArgument("--allreduce is empty");
  out->clear();
  for (bool use_mpi : mpi) {
    const auto options = use_mpi ? std::vector<equarx::AllReduceOptions>{base} : a.flags->Expand(base);
    for (const equarx::AllReduceOptions& o : options) {
      EQUARX_RETURN_IF_ERROR(equarx::CheckOptions(o));
      for (bool b : bf16) {
        ReduceConfig rc;
        rc.options = o;
        rc.bf16 = b;
        rc.mpi_allreduce = use_mpi;
        out->push_back(rc);
      }
    }
  }
  return equarx::Status::Ok();
}

}  // namespace

bool LoadModel(const Args& a, Loaded* m) {
  std::string path = !a.model.empty() ? a.model
                     : std::getenv("EQUARX_GEMMA3_MODEL") ? std::getenv("EQUARX_GEMMA3_MODEL") : "";
  if (path.empty()) { std::fprintf(stderr, "--model GGUF is required (see scripts/fetch_model.sh)\n"); return false; }
  equarx::Status st = m->file.Open(path);
  if (st.ok()) st = m->config.Read(m->file);
  if (st.ok()) st = m->tok.Load(m->file);
  if (!st.ok()) {
    std::fprintf(stderr, "equarx-gemma3: %s\n", st.message().c_str());
    return false;
  }
  return true;
}

std::optional<int> LoadModelAndConfigs(const Args& a, Loaded* m, std::vector<ReduceConfig>* configs,
                                       bool under_mpirun) {
  if (!LoadModel(a, m)) return 1;
  equarx::Status st = ReduceConfigs(a, configs);
  if (st.ok() && !under_mpirun)
    for (const ReduceConfig& rc : *configs)
      if (rc.mpi_allreduce)
        st = equarx::InvalidArgument("--allreduce mpi sums with MPI_Allreduce, one rank per process: run under mpirun");
  if (!st.ok()) {
    std::fprintf(stderr, "equarx-gemma3 %s: %s\n", a.command.c_str(), st.message().c_str());
    return 2;
  }
  return std::nullopt;
}

std::unique_ptr<Runner> MakeRunner(const Args& a, const Loaded& m, equarx::tools::World* mpi,
                                   int default_tp, int* status) {
  if (mpi) {
    if (a.Given("tp") && int(a.tp) != mpi->size()) {
      if (mpi->rank() == 0)
        std::fprintf(stderr, "--tp %d differs from the number of MPI processes (%d)\n", int(a.tp), mpi->size());
      *status = 2;
      return nullptr;
    }
    auto r = std::make_unique<MpiRunner>();
    if (const equarx::Status st = r->Load(m.file, m.config, static_cast<int>(a.threads), mpi); !st.ok()) {
      std::fprintf(stderr, "equarx-gemma3: %s\n", st.message().c_str());
      *status = 1;
      return nullptr;
    }
    return r;
  }
  if (a.Given("tp") && a.tp == 0) {
    std::fprintf(stderr, "equarx-gemma3 %s: --tp must be at least 1\n", a.command.c_str());
    *status = 2;
    return nullptr;
  }
  auto r = std::make_unique<InProcessRunner>();
  if (const equarx::Status st = r->Load(m.file, m.config, a.tp ? static_cast<int>(a.tp) : default_tp); !st.ok()) {
    std::fprintf(stderr, "equarx-gemma3: %s\n", st.message().c_str());
    *status = 1;
    return nullptr;
  }
  return r;
}

}  // namespace gemma3
