// equarx tools — in-process group runner (see group.h).
#include "group.h"

#include <cstring>
#include <string>

#include "world.h"

namespace equarx::tools {

uint64_t GroupCallResult::total_bytes() const {
  uint64_t t = 0;
  for (uint64_t b : bytes_sent) t += b;
  return t;
}

double GroupCallResult::mean_bytes_per_rank() const {
  return bytes_sent.empty() ? 0.0 : double(total_bytes()) / double(bytes_sent.size());
}

Status InProcessGroup::Create(int ranks, std::unique_ptr<InProcessGroup>* out) {
  if (ranks < 1) return InvalidArgument("a group needs at least 1 rank, got " + std::to_string(ranks));
  auto g = std::unique_ptr<InProcessGroup>(new InProcessGroup());
  EQUARX_RETURN_IF_ERROR(CreateInProcessGroup(ranks, &g->comms_));
  if (g->comms_.size() != size_t(ranks))
    return Internal("CreateInProcessGroup returned " + std::to_string(g->comms_.size()) +
                    " communicators for " + std::to_string(ranks) + " ranks");
  *out = std::move(g);
  return Status::Ok();
}

Status InProcessGroup::AllReduce(const std::vector<const void*>& send, const std::vector<void*>& recv,
                                 size_t count, DType dtype, const AllReduceOptions& options,
                                 GroupCallResult* result, const std::vector<AllReduceExtras>* extras) {
  const size_t n = comms_.size();
  if (send.size() != n || recv.size() != n)
    return InvalidArgument("need one send and one recv buffer per rank");
  if (extras && extras->size() != n) return InvalidArgument("need one AllReduceExtras per rank");
  const AllReduceExtras none;
  std::vector<uint64_t> before(n);
  for (size_t r = 0; r < n; ++r) before[r] = comms_[r]->stats().bytes_sent;
  double seconds = 0;
  RankStart start;
  start.together = true;  // the measured time covers the collective, not thread start-up
  start.seconds = &seconds;
  const std::vector<Status> status = RunOnRanks(
      int(n),
      [&](int rank) {
        const size_t r = size_t(rank);
        return comms_[r]->AllReduce(send[r], recv[r], count, dtype, options, extras ? (*extras)[r] : none);
      },
      start);
  if (result) {
    result->seconds = seconds;
    result->bytes_sent.assign(n, 0);
    for (size_t r = 0; r < n; ++r) result->bytes_sent[r] = comms_[r]->stats().bytes_sent - before[r];
  }
  return FirstFailure(status, /*name_rank=*/true);
}

int FirstDifferentRank(const std::vector<void*>& recv, size_t bytes) {
  for (size_t r = 1; r < recv.size(); ++r)
    if (bytes && std::memcmp(recv[0], recv[r], bytes) != 0) return int(r);
  return -1;
}

}  // namespace equarx::tools
