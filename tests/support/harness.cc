// Thread-rank harness (see harness.h).
#include "support/harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "codec/codec.h"
#include "support/oracle.h"
#include "transport/inproc/inproc_transport.h"

namespace equarx::testing {

std::string HexOf(const void* p, size_t n) {
  static const char* k = "0123456789abcdef";
  const auto* b = static_cast<const uint8_t*>(p);
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += k[b[i] >> 4];
    s += k[b[i] & 15];
  }
  return s;
}

Status CreateInProcessGroupOnHosts(int n, int ranks_per_host, std::vector<std::unique_ptr<Communicator>>* out) {
  if (n < 1 || ranks_per_host < 1) return InvalidArgument("CreateInProcessGroupOnHosts: n and ranks_per_host >= 1");
  auto fabric = transport::CreateInprocFabric(n);
  out->clear();
  for (int r = 0; r < n; ++r) {
    auto t = transport::CreateInprocTransport(fabric, r);
    t->SetHosts(n, ranks_per_host);  // every thread shares this process's cores
    out->push_back(std::make_unique<Communicator>(std::move(t)));
  }
  return Status::Ok();
}

std::vector<Status> RunRanks(int n, const std::function<Status(Communicator&)>& fn, int ranks_per_host) {
  std::vector<std::unique_ptr<Communicator>> comms;
  Status st = ranks_per_host > 0 ? CreateInProcessGroupOnHosts(n, ranks_per_host, &comms)
                                 : CreateInProcessGroup(n, &comms);
  if (!st.ok()) return std::vector<Status>(size_t(n > 0 ? n : 1), st);
  return tools::RunOnRanks(comms, fn);
}

std::vector<Buffer> ReduceAll(const std::vector<Buffer>& in, const AllReduceOptions& o, bool in_place,
                              std::vector<std::vector<float>>* residuals,
                              std::vector<AllReduceStats>* stats, int ranks_per_host) {
  return ReduceAll(in, o, std::vector<bool>(in.size(), in_place), residuals, stats, ranks_per_host);
}

std::vector<Buffer> ReduceAll(const std::vector<Buffer>& in, const AllReduceOptions& o,
                              const std::vector<bool>& in_place,
                              std::vector<std::vector<float>>* residuals,
                              std::vector<AllReduceStats>* stats, int ranks_per_host) {
  const int n = int(in.size());
  std::vector<Buffer> out = in;
  if (stats) stats->assign(size_t(n), AllReduceStats{});
  auto st = RunRanks(n, [&](Communicator& c) {
    const size_t r = size_t(c.rank());
    const Buffer& src = in_place[r] ? out[r] : in[r];
    AllReduceExtras x;
    if (residuals) x.residual = (*residuals)[r].data();
    if (stats) x.stats = &(*stats)[r];
    return c.AllReduce(src.data(), out[r].data(), in[0].size(), in[0].dtype, o, x);
  }, ranks_per_host);
  for (size_t r = 0; r < st.size(); ++r) EXPECT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r].ToString();
  return out;
}

void ExpectSameBitsOnEverySimdTarget(const std::function<std::vector<Buffer>()>& reduce,
                                     const std::string& what) {
  std::vector<Buffer> first;
  for (int64_t target : codec::AvailableTargets()) {
    codec::ForceTarget(target);
    auto out = reduce();
    if (first.empty()) first = out;
    EXPECT_TRUE(out[0] == first[0]) << what << " on " << codec::TargetName(target);
  }
  codec::ForceTarget(0);
}

void ExpectAgreeAndWithinBound(const std::vector<Buffer>& in, const std::vector<Buffer>& out,
                               const AllReduceOptions& o, const std::string& what) {
  for (size_t r = 1; r < out.size(); ++r) ASSERT_TRUE(out[r] == out[0]) << what << ": rank " << r << " differs";
  const auto exact = ExactSum(in);
  const auto bound = ErrorBound(in, o, in[0].dtype);
  for (size_t i = 0; i < exact.size(); ++i)
    ASSERT_LE(std::fabs(out[0].Get(i) - exact[i]), bound[i])
        << what << " element " << i << " got " << out[0].Get(i) << " exact " << exact[i];
}

}  // namespace equarx::testing
