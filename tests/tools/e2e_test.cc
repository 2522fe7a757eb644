// tests/tools — end-to-end runs of the built tools (paths come from compile definitions):
// equarx-reduce on small .npy inputs (exactness of the unquantized ring on integer-valued
// data, the bf16 and f16 paths, clear failures on bad input and usage errors, --help), and
// equarx-accuracy --quick / equarx-demo as smoke tests that must exit 0, and equarx-perf's
// #wrong (0 on every path when correct; rows run with -c 0 record null, not 0).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "error_bound.h"
#include "half.h"
#include "npy.h"
#include "random.h"
#include "temp_dir.h"

namespace equarx::tools {
namespace {

namespace fs = std::filesystem;

struct Proc {
  int code = -1;
  std::string output;  // stdout and stderr together
};

Proc RunCommand(const std::string& cmd) {
  Proc p;
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return p;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) p.output.append(buf, n);
  const int st = ::pclose(f);
  p.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return p;
}

class ReduceTest : public TempDirTest {
 protected:
  ReduceTest() : TempDirTest("equarx_e2e_") {}

  // Writes `ranks` f32 inputs of `shape` from distribution `d`; returns their paths.
  std::vector<std::string> WriteInputs(int ranks, const std::vector<size_t>& shape, Distribution d,
                                       std::vector<NpyArray>* arrays = nullptr) {
    std::vector<std::string> paths;
    for (int r = 0; r < ranks; ++r) {
      NpyArray a;
      a.shape = shape;
      a.f32.resize(a.count());
      GenSpec g;
      g.dist = d;
      g.seed = 77;
      g.stream = uint64_t(r);
      g.int_range = 50;
      Generate(g, 0, a.count(), a.f32.data());
      paths.push_back(Path("in" + std::to_string(r) + ".npy"));
      EXPECT_TRUE(WriteNpy(paths.back(), a).ok());
      if (arrays) arrays->push_back(std::move(a));
    }
    return paths;
  }
  static std::string Join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += " '" + x + "'";
    return s;
  }
};

const std::string kReduce = EQUARX_REDUCE_PATH;

TEST_F(ReduceTest, UnquantizedRingOnIntegersIsExact) {
  for (int ranks : {1, 2, 3, 5, 8}) {
    std::vector<NpyArray> in;
    const auto paths = WriteInputs(ranks, {33, 17}, Distribution::kInteger, &in);
    const Proc p = RunCommand(kReduce + " --algo ring --out '" + Path("out.npy") + "'" + Join(paths));
    ASSERT_EQ(p.code, 0) << p.output;
    EXPECT_NE(p.output.find("wire bytes per rank"), std::string::npos) << p.output;
    EXPECT_NE(p.output.find("elapsed"), std::string::npos) << p.output;
    NpyArray out;
    ASSERT_TRUE(ReadNpy(Path("out.npy"), &out).ok());
    EXPECT_EQ(out.dtype, NpyDType::kFloat32);
    EXPECT_EQ(out.shape, (std::vector<size_t>{33, 17}));
    size_t wrong = 0;
    for (size_t i = 0; i < out.count(); ++i) {
      double s = 0;
      for (const NpyArray& a : in) s += a.f32[i];
      wrong += out.f32[i] != float(s);
    }
    EXPECT_EQ(wrong, 0u) << ranks << " ranks";
  }
}

TEST_F(ReduceTest, Bf16PathWritesBf16ValuesInFloat32) {
  std::vector<NpyArray> in;
  const auto paths = WriteInputs(4, {4096}, Distribution::kNormal, &in);
  const Proc p = RunCommand(kReduce + " --algo full_bidir --phases rs+ag --block 64 --dtype bf16 --out '" +
                            Path("out.npy") + "'" + Join(paths));
  ASSERT_EQ(p.code, 0) << p.output;
  NpyArray out;
  ASSERT_TRUE(ReadNpy(Path("out.npy"), &out).ok());
  ASSERT_EQ(out.dtype, NpyDType::kFloat32);
  ASSERT_EQ(out.count(), 4096u);
  // Every element within the documented bound of the call (tools::ErrorBound, docs/algorithms.md
  // "Error bound") on the bf16 inputs, for the options as the library resolves them.
  std::vector<std::vector<float>> xb(in.size(), std::vector<float>(out.count()));
  std::vector<const float*> x;
  for (size_t r = 0; r < in.size(); ++r) {
    for (size_t i = 0; i < out.count(); ++i) xb[r][i] = BF16ToF32(F32ToBF16(in[r].f32[i]));
    x.push_back(xb[r].data());
  }
  AllReduceOptions o;
  o.algorithm = Algorithm::kFullBidir;
  o.phases = Phases::kRSAG;
  o.block = 64;
  std::vector<double> bound(out.count());
  ErrorBound(x, out.count(), 0, ResolveForBound(o, DType::kBFloat16, out.count(), 4, 4), DType::kBFloat16,
             bound.data());
  double se = 0;
  for (size_t i = 0; i < out.count(); ++i) {
    EXPECT_EQ(BF16ToF32(F32ToBF16(out.f32[i])), out.f32[i]) << "value is bf16-representable";
    double s = 0;
    for (const auto& v : xb) s += double(v[i]);
    se += (out.f32[i] - s) * (out.f32[i] - s);
    ASSERT_LE(std::fabs(out.f32[i] - s), bound[i]) << "element " << i;
  }
  EXPECT_GT(se, 0.0) << "int8 rs+ag is not exact on Gaussian data";
}

TEST_F(ReduceTest, F16PathAndWidening) {
  std::vector<NpyArray> in;
  const auto paths = WriteInputs(3, {2, 3, 5}, Distribution::kInteger, &in);
  Proc p = RunCommand(kReduce + " --algo ring --dtype f16 --out '" + Path("h.npy") + "'" + Join(paths));
  ASSERT_EQ(p.code, 0) << p.output;
  NpyArray h;
  ASSERT_TRUE(ReadNpy(Path("h.npy"), &h).ok());
  EXPECT_EQ(h.dtype, NpyDType::kFloat16);
  EXPECT_EQ(h.shape, (std::vector<size_t>{2, 3, 5}));
  for (size_t i = 0; i < h.count(); ++i)
    EXPECT_EQ(F16ToF32(h.f16[i]), in[0].f32[i] + in[1].f32[i] + in[2].f32[i]);
  // float16 files in, default dtype f16 -> float16 out; --dtype f32 widens.
  std::vector<std::string> hp;
  for (int r = 0; r < 2; ++r) {
    NpyArray a;
    a.dtype = NpyDType::kFloat16;
    a.shape = {10};
    for (int i = 0; i < 10; ++i) a.f16.push_back(F32ToF16(float(i * (r + 1))));
    hp.push_back(Path("half" + std::to_string(r) + ".npy"));
    ASSERT_TRUE(WriteNpy(hp.back(), a).ok());
  }
  p = RunCommand(kReduce + " --algo ring --out '" + Path("o16.npy") + "'" + Join(hp));
  ASSERT_EQ(p.code, 0) << p.output;
  NpyArray o;
  ASSERT_TRUE(ReadNpy(Path("o16.npy"), &o).ok());
  EXPECT_EQ(o.dtype, NpyDType::kFloat16);
  p = RunCommand(kReduce + " --algo ring --dtype f32 --out '" + Path("o32.npy") + "'" + Join(hp));
  ASSERT_EQ(p.code, 0) << p.output;
  ASSERT_TRUE(ReadNpy(Path("o32.npy"), &o).ok());
  ASSERT_EQ(o.dtype, NpyDType::kFloat32);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(o.f32[size_t(i)], float(3 * i));
}

TEST_F(ReduceTest, MismatchedShapesFail) {
  auto paths = WriteInputs(2, {8, 8}, Distribution::kNormal);
  NpyArray a;
  a.shape = {64};
  a.f32.assign(64, 1.0f);
  ASSERT_TRUE(WriteNpy(Path("flat.npy"), a).ok());
  paths.push_back(Path("flat.npy"));
  const Proc p = RunCommand(kReduce + " --out '" + Path("out.npy") + "'" + Join(paths));
  EXPECT_EQ(p.code, 1) << p.output;
  EXPECT_NE(p.output.find("shape"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("flat.npy"), std::string::npos) << p.output;
}

TEST_F(ReduceTest, TruncatedAndBadFilesFail) {
  auto paths = WriteInputs(2, {1000}, Distribution::kNormal);
  fs::resize_file(paths[1], fs::file_size(paths[1]) - 10);
  Proc p = RunCommand(kReduce + " --out '" + Path("out.npy") + "'" + Join(paths));
  EXPECT_EQ(p.code, 1) << p.output;
  EXPECT_NE(p.output.find("truncated"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("in1.npy"), std::string::npos) << p.output;
  std::ofstream(Path("junk.npy")) << "hello";
  p = RunCommand(kReduce + " --out '" + Path("out.npy") + "' '" + Path("junk.npy") + "'");
  EXPECT_EQ(p.code, 1) << p.output;
  EXPECT_NE(p.output.find("bad magic"), std::string::npos) << p.output;
  p = RunCommand(kReduce + " --out '" + Path("out.npy") + "' '" + Path("missing.npy") + "'");
  EXPECT_EQ(p.code, 1) << p.output;
  EXPECT_NE(p.output.find("missing.npy"), std::string::npos) << p.output;
}

TEST_F(ReduceTest, UsageErrorsExit2) {
  const auto paths = WriteInputs(2, {16}, Distribution::kNormal);
  const std::string out = " --out '" + Path("out.npy") + "'";
  struct Case { std::string args, expect; };
  for (const Case& c : std::vector<Case>{
           {" --algo bogus" + out + Join(paths), "unknown algorithm 'bogus'"},
           {" --phases xy" + out + Join(paths), "unknown phases"},
           {" --codec int3" + out + Join(paths), "unknown codec"},
           {" --dtype f64" + out + Join(paths), "unknown dtype"},
           {" --block 7" + out + Join(paths), "out of range"},
           {" --block x" + out + Join(paths), "--block"},
           {Join(paths), "missing --out"},
           {out, "no input files"},
           {" --frobnicate" + out + Join(paths), "--frobnicate"},
           {" --rounding up" + out + Join(paths), "unknown rounding 'up'"},
           {" --codec fp8_e4m3 --rounding stochastic" + out + Join(paths), "stochastic rounding needs an integer codec (int8, int6, int5, int4)"},
           {" --seed -1" + out + Join(paths), "--seed"},
           {" --residual-in '" + Path("r.npy") + "'" + out + Join(paths), "lists 1 files for 2 ranks"},
       }) {
    const Proc p = RunCommand(kReduce + c.args);
    EXPECT_EQ(p.code, 2) << c.args << "\n" << p.output;
    EXPECT_NE(p.output.find(c.expect), std::string::npos) << c.args << "\n" << p.output;
  }
}

TEST_F(ReduceTest, HelpListsTables) {
  const Proc p = RunCommand(kReduce + " --help");
  EXPECT_EQ(p.code, 0);
  for (const char* s : {"ring", "full_bidir", "semi", "naive_fp8", "two_shot", "rs+ag", "int8", "int4",
                        "fp8_e4m3", "fp8_e5m2", "stochastic", "hadamard", "--rotation", "--microshards",
                        "--seed", "--residual-out"})
    EXPECT_NE(p.output.find(s), std::string::npos) << s;
}

TEST_F(ReduceTest, EveryQuantizedConfigAgreesAcrossRanks) {
  const auto paths = WriteInputs(5, {3001}, Distribution::kNormal);
  for (const char* algo : {"full", "full_bidir", "semi", "naive_fp8"}) {
    for (const char* ph : {"rs", "ag", "rs+ag"}) {
      const Proc p = RunCommand(kReduce + " --algo " + algo + " --phases " + ph + " --dtype bf16 --out '" +
                                Path("o.npy") + "'" + Join(paths));
      EXPECT_EQ(p.code, 0) << algo << " " << ph << "\n" << p.output;
    }
  }
}

// Every codec and stochastic rounding from the command line: the same seed gives the same
// bytes, another seed other bytes; --stats prints each rank's telemetry.
TEST_F(ReduceTest, CodecsRoundingAndTelemetry) {
  const auto paths = WriteInputs(3, {4099}, Distribution::kNormal);
  auto run = [&](const std::string& args, const std::string& out) {
    const Proc p = RunCommand(kReduce + args + " --out '" + Path(out) + "'" + Join(paths));
    EXPECT_EQ(p.code, 0) << args << "\n" << p.output;
    NpyArray a;
    EXPECT_TRUE(ReadNpy(Path(out), &a).ok()) << args;
    return std::make_pair(p, a.f32);
  };
  for (const char* codec : {"int8", "int4", "fp8_e4m3", "fp8_e5m2"})
    for (const char* algo : {"full", "two_shot"}) {
      auto [p, y] = run(std::string(" --algo ") + algo + " --codec " + codec + " --stats", "o.npy");
      EXPECT_NE(p.output.find(std::string("codec=") + codec + ","), std::string::npos) << p.output;
      EXPECT_NE(p.output.find("telemetry rank 2: encoded 4099 values"), std::string::npos) << p.output;
    }
  const auto a = run(" --algo two_shot --codec int4 --rounding stochastic --seed 7", "a.npy").second;
  const auto b = run(" --algo two_shot --codec int4 --rounding stochastic --seed 7", "b.npy").second;
  const auto c = run(" --algo two_shot --codec int4 --rounding stochastic --seed 8", "c.npy").second;
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// Error feedback through files: --residual-out writes one residual per rank, --residual-in
// reads them back; residuals + result conserve the sum of the inputs (+ old residuals).
TEST_F(ReduceTest, ErrorFeedbackResidualFiles) {
  std::vector<NpyArray> in;
  const auto paths = WriteInputs(3, {2, 500}, Distribution::kNormal, &in);
  const std::string prefix = Path("res");
  Proc p = RunCommand(kReduce + " --algo two_shot --codec int4 --residual-out '" + prefix + "' --out '" + Path("o1.npy") + "'" +
                      Join(paths));
  ASSERT_EQ(p.code, 0) << p.output;
  EXPECT_NE(p.output.find("error feedback"), std::string::npos) << p.output;
  std::vector<NpyArray> res(3);
  NpyArray out;
  ASSERT_TRUE(ReadNpy(Path("o1.npy"), &out).ok());
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(ReadNpy(prefix + std::to_string(r) + ".npy", &res[size_t(r)]).ok());
    EXPECT_EQ(res[size_t(r)].shape, (std::vector<size_t>{2, 500}));
  }
  // f32 rounding only: the conservation bound of docs/algorithms.md ("Error feedback, telemetry,
  // stochastic rounding"), rotated (int4's default, rotation blocks of 64), no old residual.
  const size_t count = out.count();
  std::vector<double> mag(count, 0.0), conserve(count);
  for (size_t i = 0; i < count; ++i)
    for (int r = 0; r < 3; ++r) mag[i] += std::fabs(in[size_t(r)].f32[i]);
  ConservationBound(mag, 3, 64, conserve.data());
  double lost = 0;
  for (size_t i = 0; i < count; ++i) {
    double exact = 0, back = out.f32[i];
    for (int r = 0; r < 3; ++r) {
      exact += in[size_t(r)].f32[i];
      back += res[size_t(r)].f32[i];
    }
    EXPECT_LE(std::fabs(back - exact), conserve[i]) << "element " << i;
    lost = std::max(lost, std::fabs(out.f32[i] - exact));
  }
  EXPECT_GT(lost, 1e-2);  // while int4 itself lost much more
  // Feeding the residuals back in: accepted, and a second output is written.
  const std::string list = prefix + "0.npy," + prefix + "1.npy," + prefix + "2.npy";
  p = RunCommand(kReduce + " --algo two_shot --codec int4 --residual-in '" + list + "' --out '" + Path("o2.npy") + "'" + Join(paths));
  EXPECT_EQ(p.code, 0) << p.output;
  // A residual of the wrong shape is a clear error.
  NpyArray small;
  small.shape = {7};
  small.f32.assign(7, 0.0f);
  ASSERT_TRUE(WriteNpy(Path("small.npy"), small).ok());
  p = RunCommand(kReduce + " --residual-in '" + prefix + "0.npy," + prefix + "1.npy," + Path("small.npy") + "' --out '" +
                 Path("o3.npy") + "'" + Join(paths));
  EXPECT_EQ(p.code, 1) << p.output;
  EXPECT_NE(p.output.find("must be float32 of shape (2, 500)"), std::string::npos) << p.output;
}

// The quick run must produce a complete report whatever the numbers are (exit 0 = all
// anchors met, 1 = some anchor missed; never a crash or usage error).
TEST(AccuracyTool, QuickRunWritesReport) {
  const std::string md = (fs::temp_directory_path() / ("equarx_acc_" + std::to_string(::getpid()) + ".md")).string();
  const Proc p = RunCommand(std::string(EQUARX_ACCURACY_PATH) + " --quick --out '" + md + "'");
  EXPECT_TRUE(p.code == 0 || p.code == 1) << p.output;
  std::ifstream f(md);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (const char* s : {"Table I", "--quick", "naive_fp8", "semi rs+ag", "full_bidir ag", "## 2.", "## 3.",
                        "heavy", "## 4.", "| int4 | stochastic | two_shot rs+ag |", "| fp8_e5m2 | nearest |",
                        "## 5.", "Result: "})
    EXPECT_NE(text.find(s), std::string::npos) << s;
  EXPECT_EQ(text.find("| NO |"), std::string::npos) << "all ranks agree bitwise";
  EXPECT_EQ(p.code == 0, text.find("Result: OK") != std::string::npos) << "exit status matches the verdict";
  fs::remove(md);
}

// The acceptance check itself: every Table I anchor at the default block within +-20%.
TEST(AccuracyTool, QuickRunMeetsPaperAnchors) {
  const Proc p = RunCommand(std::string(EQUARX_ACCURACY_PATH) + " --quick --sections table1");
  EXPECT_EQ(p.code, 0) << p.output;
}

TEST(AccuracyTool, UsageErrorsExit2) {
  EXPECT_EQ(RunCommand(std::string(EQUARX_ACCURACY_PATH) + " --bogus").code, 2);
  EXPECT_EQ(RunCommand(std::string(EQUARX_ACCURACY_PATH) + " --block 3").code, 2);
  EXPECT_EQ(RunCommand(std::string(EQUARX_ACCURACY_PATH) + " --codec int3").code, 2);
  EXPECT_EQ(RunCommand(std::string(EQUARX_ACCURACY_PATH) + " --algo two_shot,bogus").code, 2);
  EXPECT_EQ(RunCommand(std::string(EQUARX_ACCURACY_PATH) + " --rounding up").code, 2);
  EXPECT_EQ(RunCommand(std::string(EQUARX_ACCURACY_PATH) + " --help").code, 0);
}

#ifdef EQUARX_DEMO_PATH
// Every algorithm, rotated or not, several codecs and an odd block: #wrong (outside the error
// bound) is 0 on every row, and a row that was not checked (-c 0) records null.
TEST(PerfTool, WrongIsZeroOnEveryPathAndUncheckedRowsAreNull) {
  const std::string json = (fs::temp_directory_path() / ("equarx_perf_" + std::to_string(::getpid()) + ".jsonl")).string();
  const std::string common = std::string(EQUARX_PERF_PATH) + " -b 96K -e 96K -n 1 -w 0 --ranks 3 -d bf16 -D heavy -J '" + json + "'";
  Proc p;
  std::string line;
  int rows = 0;
  for (const char* configs : {" --algo ring,full,full_bidir,semi,two_shot,auto --rotation none,hadamard"
                              " --codec int8,int4,fp8_e5m2 --block 64,100",
                              " --algo naive_fp8 --rotation none"}) {
    p = RunCommand(common + configs);
    ASSERT_EQ(p.code, 0) << p.output;
    std::ifstream f(json);
    while (std::getline(f, line)) {
      if (line.find("\"type\":\"header\"") != std::string::npos) continue;
      ++rows;
      EXPECT_NE(line.find("\"wrong\":0,"), std::string::npos) << line;
      EXPECT_NE(line.find("\"ranks_identical\":true"), std::string::npos) << line;
    }
  }
  EXPECT_GE(rows, 40) << p.output;
  p = RunCommand(std::string(EQUARX_PERF_PATH) + " -b 64K -e 64K -n 1 -w 0 --ranks 2 -c 0 --algo ring,semi -J '" + json + "'");
  ASSERT_EQ(p.code, 0) << p.output;
  std::ifstream g(json);
  rows = 0;
  while (std::getline(g, line)) {
    if (line.find("\"type\":\"header\"") != std::string::npos) continue;
    ++rows;
    EXPECT_NE(line.find("\"max_abs_err\":null,\"rel_rms_err\":null,\"wrong\":null"), std::string::npos) << line;
  }
  EXPECT_EQ(rows, 2);
  fs::remove(json);
}

TEST(DemoTool, SmallRunPasses) {
  const Proc p = RunCommand(std::string(EQUARX_DEMO_PATH) + " --size 256K --iters 2");
  EXPECT_EQ(p.code, 0) << p.output;
  EXPECT_NE(p.output.find("full_bidir"), std::string::npos) << p.output;
}
#endif

#ifdef EQUARX_MODEL_PATH
// equarx-model: the CSV rows carry the library's own byte counts (the exact match with what
// ranks send is tests/collective/cost_model_test.cc) and the options as the call resolves them.
TEST(ModelTool, CsvRowsPerHostsSizeAndSchedule) {
  const Proc p = RunCommand(std::string(EQUARX_MODEL_PATH) +
                            " --csv --hosts 2,8 --ranks-per-host 2 -b 1M -e 4M -f 4 -d bf16"
                            " --algorithm ring,two_shot --hierarchical --link-gbit 100");
  ASSERT_EQ(p.code, 0) << p.output;
  size_t lines = 0, hier = 0;
  for (size_t pos = 0; (pos = p.output.find('\n', pos)) != std::string::npos; ++pos) ++lines;
  for (size_t pos = 0; (pos = p.output.find(",hierarchical,", pos)) != std::string::npos; ++pos) ++hier;
  EXPECT_EQ(lines, 1u + 2 * 2 * 2 * 2) << p.output;  // header + hosts x sizes x algos x {flat, hier}
  EXPECT_EQ(hier, 8u) << p.output;
  EXPECT_NE(p.output.find("rotation=hadamard"), std::string::npos) << p.output;  // int8's default
}

TEST(ModelTool, UsageErrorsExit2) {
  const std::string m = EQUARX_MODEL_PATH;
  for (const char* bad : {"--bogus", "--hosts 0", "--hosts 4,x", "--link-gbit -1", "--link-gbit 0", "--codec int3",
                          "--options rotation=sideways", "-b 4M -e 1M", "--hosts 1048576 --ranks-per-host 2", "extra",
                          "--calibrate --calibrate-elements 16383", "--calibrate --calibrate-elements 67108865"})
    EXPECT_EQ(RunCommand(m + " " + bad).code, 2) << bad;
  EXPECT_EQ(RunCommand(m + " --help").code, 0);
}

// Every tool but equarx-reduce (whose positional arguments are its input files) refuses an
// argument it does not take with exit 2 before doing any work: `--validate 0` must not run the
// default (validate on) with the 0 dropped, as equarx-perf and equarx-tune once did.
// The tools this build has (the optional ones only where they were built).
std::vector<std::string> ToolPaths(bool with_reduce) {
  std::vector<std::string> tools = {EQUARX_ACCURACY_PATH, EQUARX_PERF_PATH};
  if (with_reduce) tools.push_back(EQUARX_REDUCE_PATH);
#ifdef EQUARX_DEMO_PATH
  tools.push_back(EQUARX_DEMO_PATH);
#endif
#ifdef EQUARX_MODEL_PATH
  tools.push_back(EQUARX_MODEL_PATH);
#endif
#ifdef EQUARX_TUNE_PATH
  tools.push_back(EQUARX_TUNE_PATH);
#endif
  return tools;
}

TEST(Tools, StrayArgumentsExit2) {
  for (const std::string& tool : ToolPaths(/*with_reduce=*/false)) {
    Proc p = RunCommand(tool + " stray");
    EXPECT_EQ(p.code, 2) << tool << "\n" << p.output;
    EXPECT_NE(p.output.find("unexpected argument 'stray'"), std::string::npos) << tool << "\n" << p.output;
    p = RunCommand(tool + " --validate 0");
    EXPECT_EQ(p.code, 2) << tool << "\n" << p.output;
  }
}

// Every tool answers --help with its usage and exit 0, and each option's line appears once
// (the parser aborts on an option registered twice, which would leave one of them dead).
TEST(Tools, HelpExits0AndListsEachOptionOnce) {
  for (const std::string& tool : ToolPaths(/*with_reduce=*/true)) {
    const Proc p = RunCommand(tool + " --help");
    ASSERT_EQ(p.code, 0) << tool << "\n" << p.output;
    EXPECT_NE(p.output.find("usage:"), std::string::npos) << tool << "\n" << p.output;
    std::istringstream lines(p.output);
    std::set<std::string> flags;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("  --", 0) != 0) continue;  // an option's line: "  --name ..."
      const std::string flag = line.substr(2, line.find(' ', 2) - 2);
      EXPECT_TRUE(flags.insert(flag).second) << tool << " lists " << flag << " twice";
    }
    EXPECT_GT(flags.size(), 2u) << tool << "\n" << p.output;
  }
}

TEST(ModelTool, CalibrationMeasuresEveryRate) {
  const Proc p = RunCommand(std::string(EQUARX_MODEL_PATH) + " --calibrate --hosts 2 -b 64K -e 64K");
  ASSERT_EQ(p.code, 0) << p.output;
  EXPECT_NE(p.output.find("(measured, "), std::string::npos) << p.output;
  EXPECT_EQ(p.output.find(" 0.000"), std::string::npos) << p.output;  // no rate measured as zero
}

// --calibrate-elements sizes the buffers the rates are measured on: the smallest size it takes
// runs and measures every rate too.
TEST(ModelTool, CalibrationAtAGivenSize) {
  const Proc p = RunCommand(std::string(EQUARX_MODEL_PATH) +
                            " --calibrate --calibrate-elements 16384 --hosts 2 -b 64K -e 64K");
  ASSERT_EQ(p.code, 0) << p.output;
  EXPECT_NE(p.output.find("(measured, "), std::string::npos) << p.output;
  EXPECT_EQ(p.output.find(" 0.000"), std::string::npos) << p.output;
}
#endif

class TuneTool : public TempDirTest {
 protected:
  TuneTool() : TempDirTest("equarx_tune_") {}
};

// equarx-tune takes any schedule auto chooses from as a candidate, the unquantized small-call
// ones included, writes a section whose every rule names the ring or a candidate, and auto
// loads that table (equarx-perf with EQUARX_TUNE_FILE). auto and the ring are not candidates.
TEST_F(TuneTool, UnquantizedCandidatesMakeATableAutoLoads) {
  const std::string table = Path("t.tune");
  const std::string tune = std::string(EQUARX_TUNE_PATH) + " -b 1K -e 4K -n 3 -w 1 -d f32 --ranks 2 --out '" + table + "'";
  Proc p = RunCommand(tune + " --candidates recursive_doubling,one_shot_raw,one_shot:rs+ag");
  ASSERT_EQ(p.code, 0) << p.output;
  std::ifstream f(table);
  std::string line;
  bool section = false;
  int rules = 0;
  while (std::getline(f, line)) {
    section |= line == "section ranks=2 dtype=f32";
    if (line.rfind("rule ", 0) != 0) continue;
    ++rules;
    std::istringstream ls(line.substr(5));
    std::string bytes, algo;
    ls >> bytes >> algo;
    EXPECT_TRUE(algo == "ring" || algo == "recursive_doubling" || algo == "one_shot_raw" || algo == "one_shot") << line;
  }
  EXPECT_TRUE(section) << p.output;
  EXPECT_GE(rules, 1) << p.output;
  p = RunCommand("EQUARX_TUNE_FILE='" + table + "' " + EQUARX_PERF_PATH + " -b 1K -e 4K -n 2 -w 1 --ranks 2 -d f32 --algo auto");
  EXPECT_EQ(p.code, 0) << p.output;
  for (const char* bad : {"auto", "ring", "nonsense", "one_shot:sideways"})
    EXPECT_EQ(RunCommand(tune + " --candidates " + bad).code, 2) << bad;
}

}  // namespace
}  // namespace equarx::tools
