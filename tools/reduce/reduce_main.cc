// equarx-reduce — AllReduce of .npy files with an N-rank in-process group.
//
//   equarx-reduce [--algo A] [--phases P] [--codec C] [--block B] [--rotation R] [...]
//                 [--stats] [--residual-in R0.npy,R1.npy,...] [--residual-out PREFIX]
//                 [--dtype bf16|f16|f32] --out OUT.npy IN0.npy ... IN{N-1}.npy
// Every AllReduce option of the library is a flag (tools/common/option_flags.h).
//
// Input i is rank i's buffer (float32 or float16 .npy, all the same shape and dtype). The
// AllReduce runs in `--dtype` (default: the files' dtype): bf16 rounds the inputs to bf16
// (RNE) and writes float32 holding the bf16 results; f16 writes float16; f32 writes float32.
// Rank 0's result is written with the input shape; the tool fails if any rank's result
// differs bitwise from rank 0's (a hard guarantee of the library). It prints the wire bytes
// each rank sent (Communicator::stats().bytes_sent) and the elapsed time; with --stats also each
// rank's encode telemetry (AllReduceStats). Error feedback: --residual-in gives each rank's
// starting residual (float32 .npy of the input's shape; zeros if absent) and --residual-out
// writes each rank's new residual to PREFIX<r>.npy; either one turns error feedback on.
// Exit codes: 0 ok, 1 runtime error (bad file, shape mismatch, collective failure, ranks
// disagree), 2 usage error.
#include <cstdio>
#include <cstring>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "equarx/communicator.h"
#include "equarx/options.h"
#include "equarx/types.h"
#include "group.h"
#include "half.h"
#include "npy.h"
#include "option_flags.h"

namespace equarx::tools {
namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

// What --help prints after the options.
std::string HelpText() {
  return "\nRuns an N-rank in-process AllReduce of the N input arrays (rank i gets IN_i) and\n"
         "writes rank 0's result. Inputs: float32 ('<f4') or float16 ('<f2') .npy, same shape.\n"
         "--dtype bf16 rounds the inputs to bf16 and writes float32 holding the bf16 results.\n"
         "Exit status: 0 ok, 1 runtime error, 2 usage error.\n" +
         OptionFlags::ValuesHelp();
}

int Usage(const std::string& msg) {
  std::fprintf(stderr, "equarx-reduce: %s\n(run equarx-reduce --help for usage)\n", msg.c_str());
  return kExitUsage;
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "equarx-reduce: error: %s\n", msg.c_str());
  return kExitRuntime;
}

// Rank r's buffer in the run dtype, converted from the file.
void ToRunDType(const NpyArray& a, DType run, std::vector<uint8_t>* buf) {
  const size_t n = a.count();
  buf->resize(n * DTypeSize(run));
  auto f32_at = [&](size_t i) {
    return a.dtype == NpyDType::kFloat32 ? a.f32[i] : F16ToF32(a.f16[i]);
  };
  if (run == DType::kFloat32) {
    float* d = reinterpret_cast<float*>(buf->data());
    for (size_t i = 0; i < n; ++i) d[i] = f32_at(i);
  } else if (run == DType::kBFloat16) {
    uint16_t* d = reinterpret_cast<uint16_t*>(buf->data());
    for (size_t i = 0; i < n; ++i) d[i] = F32ToBF16(f32_at(i));
  } else {
    uint16_t* d = reinterpret_cast<uint16_t*>(buf->data());
    if (a.dtype == NpyDType::kFloat16) {
      for (size_t i = 0; i < n; ++i) d[i] = a.f16[i];
    } else {
      for (size_t i = 0; i < n; ++i) d[i] = F32ToF16(a.f32[i]);
    }
  }
}

int Main(int argc, char** argv) {
  std::string dtype_s, out_path, residual_in, residual_out;
  bool print_stats = false;
  ArgParser p("equarx-reduce", "[options] --out OUT.npy IN0.npy [IN1.npy ...]");
  p.TakePositional();
  OptionFlags flags(&p);
  p.AddFlag("stats", &print_stats, "print each rank's encode telemetry (estimated error, clips)");
  p.AddString("residual-in", &residual_in,
              "error feedback: comma list of one float32 .npy residual per rank (default zeros)", "LIST");
  p.AddString("residual-out", &residual_out,
              "error feedback: write rank r's new residual to PREFIX<r>.npy", "PREFIX");
  p.AddString("dtype", &dtype_s, "bf16|f16|f32: dtype of the AllReduce (default: the files')", "T");
  p.AddString("out", &out_path, "output .npy file (rank 0's result)", "OUT");
  if (auto rc = p.ParseCommandLine(argc, argv, HelpText())) return *rc;
  const AllReduceOptions opt = flags.Options();
  if (Status st = CheckOptions(opt); !st.ok()) return Usage(st.message());
  std::optional<DType> dtype_opt;
  if (!dtype_s.empty()) {
    dtype_opt = ParseDType(dtype_s);
    if (!dtype_opt) return Usage("unknown dtype '" + dtype_s + "' (bf16, f16 or f32)");
  }
  if (out_path.empty()) return Usage("missing --out OUT.npy");
  const std::vector<std::string>& inputs = p.positional();
  if (inputs.empty()) return Usage("no input files (one .npy per rank)");
  if (inputs.size() > 4096) return Usage("too many inputs (at most 4096 ranks)");

  // Read and convert one file at a time, so only one file-sized copy is alive at once.
  const int ranks = int(inputs.size());
  std::vector<std::vector<uint8_t>> send(inputs.size());
  std::vector<size_t> shape;
  NpyDType file_dtype = NpyDType::kFloat32;
  DType run = DType::kFloat32;
  for (size_t r = 0; r < inputs.size(); ++r) {
    NpyArray a;
    if (Status s = ReadNpy(inputs[r], &a); !s.ok()) return Fail(s.message());
    if (r == 0) {
      shape = a.shape;
      file_dtype = a.dtype;
      run = dtype_opt ? *dtype_opt
                      : (a.dtype == NpyDType::kFloat32 ? DType::kFloat32 : DType::kFloat16);
    } else if (a.dtype != file_dtype) {
      return Fail(inputs[r] + " is " + NpyDTypeName(a.dtype) + " but " + inputs[0] + " is " +
                  NpyDTypeName(file_dtype) + " (all inputs must have the same dtype)");
    } else if (a.shape != shape) {
      return Fail(inputs[r] + " has shape " + ShapeString(a.shape) + " but " + inputs[0] +
                  " has shape " + ShapeString(shape) + " (all inputs must have the same shape)");
    }
    ToRunDType(a, run, &send[r]);
  }
  size_t count = 1;
  for (size_t d : shape) count *= d;
  const size_t bytes = count * DTypeSize(run);

  // Error feedback: one f32 residual per rank, from --residual-in or zeros.
  const bool feedback = !residual_in.empty() || !residual_out.empty();
  std::vector<std::vector<float>> residual;
  if (feedback) {
    residual.assign(inputs.size(), std::vector<float>(count, 0.0f));
    if (!residual_in.empty()) {
      std::vector<std::string> paths;
      std::stringstream list(residual_in);
      for (std::string item; std::getline(list, item, ',');) paths.push_back(item);
      if (paths.size() != inputs.size())
        return Usage("--residual-in lists " + std::to_string(paths.size()) + " files for " +
                     std::to_string(inputs.size()) + " ranks");
      for (size_t r = 0; r < paths.size(); ++r) {
        NpyArray a;
        if (Status s = ReadNpy(paths[r], &a); !s.ok()) return Fail(s.message());
        if (a.dtype != NpyDType::kFloat32 || a.shape != shape)
          return Fail(paths[r] + " must be float32 of shape " + ShapeString(shape) + " (it is " +
                      NpyDTypeName(a.dtype) + " " + ShapeString(a.shape) + ")");
        residual[r] = std::move(a.f32);
      }
    }
  }
  std::vector<AllReduceExtras> extras(inputs.size());
  std::vector<AllReduceStats> stats(inputs.size());
  for (size_t r = 0; r < inputs.size(); ++r) {
    if (feedback) extras[r].residual = residual[r].data();
    if (print_stats) extras[r].stats = &stats[r];
  }

  std::unique_ptr<InProcessGroup> group;
  if (Status s = InProcessGroup::Create(ranks, &group); !s.ok()) return Fail(s.ToString());
  std::vector<std::vector<uint8_t>> recv(inputs.size(), std::vector<uint8_t>(bytes));
  std::vector<const void*> sp;
  std::vector<void*> rp;
  for (size_t r = 0; r < inputs.size(); ++r) {
    sp.push_back(send[r].data());
    rp.push_back(recv[r].data());
  }
  GroupCallResult res;
  if (Status s = group->AllReduce(sp, rp, count, run, opt, &res, &extras); !s.ok())
    return Fail("AllReduce failed: " + s.ToString());
  send.clear();
  send.shrink_to_fit();
  const int bad = FirstDifferentRank(rp, bytes);

  NpyArray out;
  out.shape = shape;
  if (run == DType::kFloat16) {
    out.dtype = NpyDType::kFloat16;
    out.f16.resize(count);
    if (bytes) std::memcpy(out.f16.data(), recv[0].data(), bytes);
  } else {
    out.dtype = NpyDType::kFloat32;
    out.f32.resize(count);
    if (run == DType::kFloat32) {
      if (bytes) std::memcpy(out.f32.data(), recv[0].data(), bytes);
    } else {
      BF16ToF32Array(reinterpret_cast<const uint16_t*>(recv[0].data()), count, out.f32.data());
    }
  }
  if (Status s = WriteNpy(out_path, out); !s.ok()) return Fail(s.message());
  if (!residual_out.empty()) {
    for (size_t r = 0; r < residual.size(); ++r) {
      NpyArray ra;
      ra.shape = shape;
      ra.f32 = std::move(residual[r]);
      const std::string path = residual_out + std::to_string(r) + ".npy";
      if (Status s = WriteNpy(path, ra); !s.ok()) return Fail(s.message());
    }
  }

  std::printf("equarx-reduce: %d ranks, %zu elements %s, dtype %s, options %s",
              ranks, count, ShapeString(shape).c_str(), std::string(DTypeName(run)).c_str(),
              FormatOptions(opt).c_str());
  std::printf("%s\n", feedback ? ", error feedback" : "");
  std::printf("wire bytes per rank:");
  for (size_t r = 0; r < res.bytes_sent.size(); ++r)
    std::printf("%s %llu", r ? "," : "", static_cast<unsigned long long>(res.bytes_sent[r]));
  std::printf("\nwire bytes total: %llu (%s); logical bytes per rank: %zu\n",
              static_cast<unsigned long long>(res.total_bytes()),
              FormatBytes(double(res.total_bytes())).c_str(), bytes);
  std::printf("elapsed: %.3f ms\n", res.seconds * 1e3);
  if (print_stats)
    for (size_t r = 0; r < stats.size(); ++r)
      std::printf("telemetry rank %zu: encoded %llu values, est. rms err %.3e (rel %.3e), est. max abs err "
                  "%.3e, clipped %llu\n",
                  r, static_cast<unsigned long long>(stats[r].encoded_values), stats[r].rms_err_est,
                  stats[r].rel_rms_err_est, double(stats[r].max_abs_err_est),
                  static_cast<unsigned long long>(stats[r].clipped));
  if (!residual_out.empty())
    std::printf("wrote residuals %s0.npy .. %s%d.npy\n", residual_out.c_str(), residual_out.c_str(), ranks - 1);
  std::printf("wrote %s (%s %s)\n", out_path.c_str(), NpyDTypeName(out.dtype), ShapeString(shape).c_str());
  if (bad >= 0)
    return Fail("rank " + std::to_string(bad) +
                "'s result differs bitwise from rank 0's (wrote rank 0's result anyway)");
  return 0;
}

}  // namespace
}  // namespace equarx::tools

int main(int argc, char** argv) { return equarx::tools::Main(argc, argv); }
