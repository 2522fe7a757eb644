// The C API: result codes, config versioning, bad arguments, last-error messages.
#include "equarx/equarx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "world.h"

namespace {

// Runs one AllReduce per rank (the tools' launcher, tools/common/world.h) with per-rank configs.
std::vector<equarxResult_t> RunAll(std::vector<equarxComm_t>& comms,
                                   std::vector<equarxConfig_t>& configs,
                                   std::vector<std::vector<float>>& data,
                                   equarxDataType_t dt = equarxFloat32) {
  std::vector<equarxResult_t> out(comms.size());
  equarx::tools::RunOnRanks(int(comms.size()), [&](int r) {
    out[size_t(r)] = equarxAllReduce(data[size_t(r)].data(), data[size_t(r)].data(), data[size_t(r)].size(), dt,
                                     &configs[size_t(r)], comms[size_t(r)]);
    return equarx::Status::Ok();  // the C API's result is out[r]
  });
  return out;
}

TEST(CApi, ErrorStringsAreStableNames) {
  EXPECT_STREQ(equarxGetErrorString(equarxSuccess), "ok");
  EXPECT_STREQ(equarxGetErrorString(equarxInvalidArgument), "invalid_argument");
  EXPECT_STREQ(equarxGetErrorString(equarxMismatch), "mismatch");
  EXPECT_STREQ(equarxGetErrorString(equarxTimeout), "timeout");
  EXPECT_STREQ(equarxGetErrorString(equarxResult_t(999)), "unknown");
}

TEST(CApi, NullArgumentsAreErrorsNotCrashes) {
  EXPECT_EQ(equarxAllReduce(nullptr, nullptr, 1, equarxFloat32, nullptr, nullptr), equarxInvalidArgument);
  EXPECT_EQ(equarxCommCreateInProcess(2, nullptr), equarxInvalidArgument);
  EXPECT_EQ(equarxCommDestroy(nullptr), equarxInvalidArgument);
  EXPECT_EQ(equarxCommRank(nullptr, nullptr), equarxInvalidArgument);
  EXPECT_STREQ(equarxCommGetLastError(nullptr), "communicator is NULL");
  equarxComm_t c[1];
  EXPECT_EQ(equarxCommCreateInProcess(0, c), equarxInvalidArgument);
}

TEST(CApi, AllReduceWithDefaultsAndLastError) {
  const int n = 3;
  std::vector<equarxComm_t> comms(n);
  ASSERT_EQ(equarxCommCreateInProcess(n, comms.data()), equarxSuccess);
  int rank = -1, count = -1;
  ASSERT_EQ(equarxCommRank(comms[2], &rank), equarxSuccess);
  ASSERT_EQ(equarxCommCount(comms[2], &count), equarxSuccess);
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(count, 3);

  std::vector<std::vector<float>> data(n, std::vector<float>(1000, 2.0f));
  std::vector<equarxConfig_t> cfg(n);
  for (auto& c : cfg) {
    equarxConfigInit(&c);
    c.algorithm = equarxAlgoRing;
  }
  auto res = RunAll(comms, cfg, data);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(res[r], equarxSuccess) << equarxCommGetLastError(comms[r]);
    EXPECT_EQ(data[r][999], 6.0f);
    EXPECT_STREQ(equarxCommGetLastError(comms[r]), "");
    // The ring's buffers for 1000 f32: more than nothing, far less than the 64 MiB floor.
    uint64_t scratch = 0;
    ASSERT_EQ(equarxCommScratchBytes(comms[r], &scratch), equarxSuccess);
    EXPECT_GT(scratch, 0u);
    EXPECT_LE(scratch, uint64_t(64) << 20);
  }
  EXPECT_EQ(equarxCommScratchBytes(nullptr, nullptr), equarxInvalidArgument);

  // A bad block on rank 1 fails on every rank, with a message naming it.
  cfg[1].block = 7;
  res = RunAll(comms, cfg, data);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(res[r], equarxInvalidArgument);
    EXPECT_NE(std::string(equarxCommGetLastError(comms[r])).find("block 7 is out of range"), std::string::npos)
        << equarxCommGetLastError(comms[r]);
  }
  cfg[1].block = 64;

  // An unset config (size 0) is refused on that rank, and the others hear of it.
  std::memset(&cfg[0], 0, sizeof cfg[0]);
  res = RunAll(comms, cfg, data);
  EXPECT_EQ(res[0], equarxInvalidArgument);
  EXPECT_NE(std::string(equarxCommGetLastError(comms[0])).find("config.size"), std::string::npos);
  EXPECT_EQ(res[1], equarxInvalidArgument);
  EXPECT_EQ(res[2], equarxInvalidArgument);
  equarxConfigInit(&cfg[0]);
  cfg[0].algorithm = equarxAlgoRing;

  // A bad datatype too.
  res = RunAll(comms, cfg, data, equarxDataType_t(42));
  for (int r = 0; r < n; ++r) EXPECT_EQ(res[r], equarxInvalidArgument) << equarxCommGetLastError(comms[r]);

  for (auto c : comms) EXPECT_EQ(equarxCommDestroy(c), equarxSuccess);
}

// One AllReduce (in place, f32) of `data` on a new in-process group of data.size() ranks, every
// rank's config prepared by `make_config`; every rank must succeed.
void ReduceOnNewGroup(const std::function<void(equarxConfig_t&)>& make_config,
                      std::vector<std::vector<float>>& data) {
  const size_t n = data.size();
  std::vector<equarxComm_t> comms(n);
  ASSERT_EQ(equarxCommCreateInProcess(int(n), comms.data()), equarxSuccess);
  std::vector<equarxConfig_t> cfg(n);
  for (auto& c : cfg) make_config(c);
  auto res = RunAll(comms, cfg, data);
  for (size_t r = 0; r < n; ++r) EXPECT_EQ(res[r], equarxSuccess) << equarxCommGetLastError(comms[r]);
  for (auto c : comms) equarxCommDestroy(c);
}

TEST(CApi, OlderShorterConfigGetsDefaultsForNewFields) {
  std::vector<std::vector<float>> data(2, std::vector<float>(500, 1.0f));
  ASSERT_NO_FATAL_FAILURE(ReduceOnNewGroup(
      [](equarxConfig_t& c) {
        std::memset(&c, 0xFF, sizeof c);  // garbage beyond what an "old" caller knows
        c.size = offsetof(equarxConfig_t, microshards);
        c.algorithm = equarxAlgoRing;
        c.phases = equarxPhasesRSAG;
        c.codec = equarxCodecInt8;
        c.block = 64;
      },
      data));
  for (const auto& d : data) EXPECT_EQ(d[0], 2.0f);
}

// A config from before `rounding` and `seed` existed still works (nearest rounding).
TEST(CApi, ConfigWithoutRoundingFieldsIsNearest) {
  std::vector<std::vector<float>> data(2, std::vector<float>(500, 0.3f));
  ReduceOnNewGroup(
      [](equarxConfig_t& c) {
        equarxConfigInit(&c);
        c.rounding = 77;  // garbage beyond the old size
        c.size = offsetof(equarxConfig_t, rounding);
      },
      data);
}

// equarxAllReduceEx: int4 with stochastic rounding, error feedback and telemetry from C.
TEST(CApi, AllReduceExWithResidualAndStats) {
  const int n = 3;
  const size_t count = 4096;
  std::vector<equarxComm_t> comms(n);
  ASSERT_EQ(equarxCommCreateInProcess(n, comms.data()), equarxSuccess);
  std::vector<std::vector<float>> data(n), out(n, std::vector<float>(count)),
      residual(n, std::vector<float>(count, 0.0f));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) data[r].push_back(float(std::sin(double(i) * 0.01 + r)));
  std::vector<equarxStats_t> stats(n);
  std::vector<equarxResult_t> res(n);
  auto call = [&](bool bad_stats) {
    equarx::tools::RunOnRanks(n, [&](int r) {
      equarxConfig_t c = EQUARX_CONFIG_INITIALIZER;
      c.algorithm = equarxAlgoTwoShot;
      c.codec = equarxCodecInt4;
      c.rounding = equarxRoundStochastic;
      c.seed = 42;
      equarxStats_t s = EQUARX_STATS_INITIALIZER;
      if (bad_stats && r == 1) s.size = 0;
      res[r] = equarxAllReduceEx(data[r].data(), out[r].data(), count, equarxFloat32, &c,
                                 residual[r].data(), &s, comms[r]);
      stats[r] = s;
      return equarx::Status::Ok();  // the C API's result is res[r]
    });
  };
  call(false);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(res[r], equarxSuccess) << equarxCommGetLastError(comms[r]);
    EXPECT_EQ(stats[r].encoded_values, count);
    EXPECT_GT(stats[r].rms_err_est, 0.0);
    EXPECT_GT(stats[r].rel_rms_err_est, 0.0);
    EXPECT_EQ(out[r], out[0]);
    double sq = 0;
    for (float e : residual[r]) sq += double(e) * e;
    EXPECT_GT(sq, 0.0);  // int4 loses something, and the residual keeps it
  }
  call(true);  // an uninitialised stats struct on rank 1: every rank fails
  for (int r = 0; r < n; ++r) EXPECT_EQ(res[r], equarxInvalidArgument) << r;
  EXPECT_NE(std::string(equarxCommGetLastError(comms[1])).find("EQUARX_STATS_INITIALIZER"), std::string::npos);
  for (auto c : comms) equarxCommDestroy(c);
}

}  // namespace
