// CreateCommunicator and equarxCommCreate (include/equarx/bootstrap.h): a group set up
// through the caller's exchange, here threads sharing a board (support/socket_mesh.h's
// ThreadGather), over each data path, encrypted and not; the cards' checks (a differing data
// path or encryption fails every rank); EQUARX_ENCRYPT; the exchange's failures; the C API.
#include "equarx/bootstrap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "equarx/equarx.h"
#include "support/socket_mesh.h"
#include "world.h"

namespace equarx {
namespace {

using testing::ThreadGather;

std::vector<std::vector<float>> Inputs(int n, size_t count) {
  std::mt19937 gen(7);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<std::vector<float>> in(static_cast<size_t>(n), std::vector<float>(count));
  for (auto& v : in)
    for (auto& x : v) x = d(gen);
  return in;
}

// Rank r of n: CreateCommunicator through `gather`, then one int8 AllReduce of in[r].
struct Ranks {
  std::vector<Status> setup, call;
  std::vector<std::vector<float>> out;
};

Ranks SetUpAndReduce(int n, const std::vector<BootstrapOptions>& options, const std::vector<int>& sizes,
                     const std::vector<std::vector<float>>& in, const AllReduceOptions& ar) {
  Ranks res;
  res.setup.resize(size_t(n));
  res.out.resize(size_t(n));
  ThreadGather gather(n);
  res.call = tools::RunOnRanks(n, [&](int r) {
    std::unique_ptr<Communicator> c;
    res.setup[size_t(r)] = CreateCommunicator(r, sizes[size_t(r)], gather.For(r), options[size_t(r)], &c);
    if (!res.setup[size_t(r)].ok()) return Status::Ok();
    res.out[size_t(r)].resize(in[size_t(r)].size());
    return c->AllReduce(in[size_t(r)].data(), res.out[size_t(r)].data(), in[size_t(r)].size(), DType::kFloat32, ar);
  });
  return res;
}

std::vector<float> InProcess(const std::vector<std::vector<float>>& in, const AllReduceOptions& ar) {
  std::vector<std::unique_ptr<Communicator>> comms;
  EXPECT_TRUE(CreateInProcessGroup(int(in.size()), &comms).ok());
  std::vector<std::vector<float>> out(in.size(), std::vector<float>(in[0].size()));
  for (const Status& st : tools::RunOnRanks(comms, [&](Communicator& c) {
         const size_t r = size_t(c.rank());
         return c.AllReduce(in[r].data(), out[r].data(), in[r].size(), DType::kFloat32, ar);
       }))
    EXPECT_TRUE(st.ok()) << st.ToString();
  return out[0];
}

BootstrapOptions Quick(DataPath p) {
  BootstrapOptions o;
  o.data_path = p;
  o.setup_timeout_ms = 10000;
  return o;
}

TEST(Bootstrap, EveryDataPathGivesTheInProcessBits) {
  const int n = 3;
  const auto in = Inputs(n, 100000);
  AllReduceOptions ar;
  ar.algorithm = Algorithm::kTwoShot;
  const std::vector<float> want = InProcess(in, ar);
  for (const bool encrypt : {false, true})
  for (DataPath p : {DataPath::kSockets, DataPath::kHost, DataPath::kSharedMemory}) {
    SCOPED_TRACE(std::string(DataPathName(p)) + (encrypt ? " encrypted" : ""));
    BootstrapOptions o = Quick(p);
    o.encrypt = encrypt;
    const Ranks got = SetUpAndReduce(n, std::vector<BootstrapOptions>(n, o), std::vector<int>(n, n), in, ar);
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(got.setup[size_t(r)].ok()) << got.setup[size_t(r)].ToString();
      ASSERT_TRUE(got.call[size_t(r)].ok()) << got.call[size_t(r)].ToString();
      EXPECT_EQ(std::memcmp(got.out[size_t(r)].data(), want.data(), want.size() * sizeof(float)), 0) << "rank " << r;
    }
  }
}

TEST(Bootstrap, AWrongWorldSizeFailsOnEveryRank) {
  const auto in = Inputs(2, 64);
  const Ranks got = SetUpAndReduce(2, std::vector<BootstrapOptions>(2, Quick(DataPath::kSockets)), {2, 3}, in, {});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(got.setup[size_t(r)].code(), StatusCode::kInvalidArgument) << got.setup[size_t(r)].ToString();
    EXPECT_NE(got.setup[size_t(r)].message().find("world size differs"), std::string::npos)
        << got.setup[size_t(r)].ToString();
  }
}

TEST(Bootstrap, DifferingDataPathsFailOnEveryRank) {
  const auto in = Inputs(2, 64);
  const Ranks got = SetUpAndReduce(2, {Quick(DataPath::kSockets), Quick(DataPath::kSharedMemory)}, {2, 2}, in, {});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(got.setup[size_t(r)].code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.setup[size_t(r)].message().find("data path"), std::string::npos) << got.setup[size_t(r)].ToString();
  }
}

TEST(Bootstrap, DifferingEncryptionFailsOnEveryRank) {
  const auto in = Inputs(3, 64);
  for (DataPath p : {DataPath::kSockets, DataPath::kHost}) {
    std::vector<BootstrapOptions> o(3, Quick(p));
    o[1].encrypt = true;
    const Ranks got = SetUpAndReduce(3, o, {3, 3, 3}, in, {});
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(got.setup[size_t(r)].code(), StatusCode::kInvalidArgument) << got.setup[size_t(r)].ToString();
      EXPECT_NE(got.setup[size_t(r)].message().find("disagree on encrypting the data path: rank(s) 1 encrypt, "
                                                    "rank(s) 0, 2 do not"),
                std::string::npos)
          << got.setup[size_t(r)].ToString();
    }
  }
}

TEST(Bootstrap, EncryptionFromTheEnvironment) {
  BootstrapOptions o;
  for (const char* v : {"1", "0", "yes", "2", ""}) {
    setenv("EQUARX_ENCRYPT", v, 1);
    const Status st = BootstrapOptions::FromEnvironment(&o);
    const std::string value = v;
    if (value == "1" || value == "0" || value.empty()) {
      ASSERT_TRUE(st.ok()) << v << ": " << st.ToString();
      EXPECT_EQ(o.encrypt, value == "1") << v;
    } else {  // refused: an error, never a quiet fall back to plaintext
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << v;
      EXPECT_NE(st.message().find("EQUARX_ENCRYPT='" + value + "': expected 0 or 1"), std::string::npos)
          << st.ToString();
    }
  }
  unsetenv("EQUARX_ENCRYPT");
  ASSERT_TRUE(BootstrapOptions::FromEnvironment(&o).ok());
  EXPECT_FALSE(o.encrypt);
}

TEST(Bootstrap, BadArgumentsAndAFailingExchangeAreErrors) {
  std::unique_ptr<Communicator> c;
  auto never = [](const void*, size_t, void*) { return Status::Ok(); };
  EXPECT_EQ(CreateCommunicator(2, 2, never, {}, &c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCommunicator(-1, 2, never, {}, &c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCommunicator(0, 0, never, {}, &c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCommunicator(0, 1, nullptr, {}, &c).code(), StatusCode::kInvalidArgument);
  BootstrapOptions mpi;
  mpi.data_path = DataPath::kMpi;
  EXPECT_EQ(CreateCommunicator(0, 1, never, mpi, &c).code(), StatusCode::kInvalidArgument);
  BootstrapOptions zero;
  zero.setup_timeout_ms = 0;
  EXPECT_EQ(CreateCommunicator(0, 1, never, zero, &c).code(), StatusCode::kInvalidArgument);
  // An exchange that returns nothing useful (all zeros): no card, a clear error.
  auto zeros = [](const void*, size_t bytes, void* all) {
    std::memset(all, 0, bytes * 2);
    return Status::Ok();
  };
  const Status junk = CreateCommunicator(0, 2, zeros, {}, &c);
  EXPECT_EQ(junk.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(junk.message().find("no equarx card"), std::string::npos) << junk.ToString();
  // The exchange's own error comes back as it is.
  auto late = [](const void*, size_t, void*) { return Timeout("the store did not answer"); };
  const Status t = CreateCommunicator(0, 2, late, {}, &c);
  EXPECT_EQ(t.code(), StatusCode::kTimeout);
  EXPECT_EQ(c, nullptr);
}

TEST(Bootstrap, OneRankNeedsNoPeers) {
  const auto in = Inputs(1, 1000);
  const Ranks got = SetUpAndReduce(1, {Quick(DataPath::kSockets)}, {1}, in, {});
  ASSERT_TRUE(got.setup[0].ok()) << got.setup[0].ToString();
  ASSERT_TRUE(got.call[0].ok()) << got.call[0].ToString();
}

// The C API: the exchange is a C function with a user pointer.
struct CGather {
  ThreadGather* gather;
  int rank;
};

equarxResult_t CExchange(const void* mine, size_t bytes, void* all, void* user) {
  auto* g = static_cast<CGather*>(user);
  return g->gather->For(g->rank)(mine, bytes, all).ok() ? equarxSuccess : equarxRemoteError;
}

equarxResult_t CFails(const void*, size_t, void*, void*) { return equarxTimeout; }

TEST(Bootstrap, CApiCreatesAGroupAndReportsErrors) {
  const int n = 2;
  ThreadGather gather(n);
  std::vector<equarxComm_t> comms(n, nullptr);
  std::vector<equarxResult_t> rc(n);
  std::vector<std::vector<float>> data = Inputs(n, 4096);
  // The default call, as the sockets path sees its ranks: no hosts known (an in-process group
  // is one host, where auto resolves through another table).
  AllReduceOptions as_sockets;
  as_sockets.ranks_per_host = 1;
  const std::vector<float> want = InProcess(data, as_sockets);
  tools::RunOnRanks(n, [&](int r) {
    CGather g{&gather, r};
    rc[size_t(r)] = equarxCommCreate(r, n, CExchange, &g, "sockets", 10000, &comms[size_t(r)]);
    if (rc[size_t(r)] == equarxSuccess)
      rc[size_t(r)] = equarxAllReduce(data[size_t(r)].data(), data[size_t(r)].data(), data[size_t(r)].size(),
                                      equarxFloat32, nullptr, comms[size_t(r)]);
    return Status::Ok();  // the C API's result is rc[r]
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(rc[size_t(r)], equarxSuccess) << r;
    int rank = -1, count = 0;
    EXPECT_EQ(equarxCommRank(comms[size_t(r)], &rank), equarxSuccess);
    EXPECT_EQ(equarxCommCount(comms[size_t(r)], &count), equarxSuccess);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(count, n);
    EXPECT_EQ(std::memcmp(data[size_t(r)].data(), want.data(), want.size() * sizeof(float)), 0);
    EXPECT_EQ(equarxCommDestroy(comms[size_t(r)]), equarxSuccess);
  }
  equarxComm_t c = nullptr;
  EXPECT_EQ(equarxCommCreate(0, 2, CFails, nullptr, "sockets", 1000, &c), equarxTimeout);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(std::string(equarxGetLastCreateError()).find("set-up exchange failed"), std::string::npos)
      << equarxGetLastCreateError();
  EXPECT_EQ(equarxCommCreate(0, 2, CFails, nullptr, "carrier-pigeon", 1000, &c), equarxInvalidArgument);
  EXPECT_NE(std::string(equarxGetLastCreateError()).find("carrier-pigeon"), std::string::npos);
  EXPECT_EQ(equarxCommCreate(0, 2, nullptr, nullptr, nullptr, 0, &c), equarxInvalidArgument);
  EXPECT_EQ(equarxCommCreate(0, 2, CFails, nullptr, nullptr, 0, nullptr), equarxInvalidArgument);
}

}  // namespace
}  // namespace equarx
