// Thread-rank harness (see harness.h).
#include "support/harness.h"

#include <thread>

namespace equarx::testing {

std::vector<Status> RunRanks(std::vector<std::unique_ptr<Communicator>>& comms,
                             const std::function<Status(Communicator&)>& fn) {
  std::vector<Status> out(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r)
    threads.emplace_back([&, r] { out[r] = fn(*comms[r]); });
  for (auto& t : threads) t.join();
  return out;
}

std::vector<Status> RunRanks(int n, const std::function<Status(Communicator&)>& fn) {
  std::vector<std::unique_ptr<Communicator>> comms;
  Status st = CreateInProcessGroup(n, &comms);
  if (!st.ok()) return std::vector<Status>(size_t(n > 0 ? n : 1), st);
  return RunRanks(comms, fn);
}

}  // namespace equarx::testing
