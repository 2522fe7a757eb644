// Threads as socket transport ranks (see socket_mesh.h).
#include "support/socket_mesh.h"

#include <cstring>
#include <thread>

namespace equarx::testing {

transport::AllGather ThreadGather::For(int r, GatherHook hook) {
  return [this, r, hook](const void* mine, size_t bytes, void* all) {
    sync_.arrive_and_wait();
    if (r == 0) board_.assign(bytes * size_t(n_), 0);
    sync_.arrive_and_wait();
    std::memcpy(board_.data() + bytes * size_t(r), mine, bytes);
    sync_.arrive_and_wait();
    std::memcpy(all, board_.data(), bytes * size_t(n_));
    if (hook) hook(r, static_cast<const uint8_t*>(all), bytes);
    sync_.arrive_and_wait();
    return Status::Ok();
  };
}

std::vector<Status> SocketMesh(int n, std::vector<std::unique_ptr<transport::Transport>>* out,
                               const std::function<void(int, transport::SocketOptions*)>& options,
                               const GatherHook& hook) {
  out->clear();
  out->resize(size_t(n));
  std::vector<Status> st(static_cast<size_t>(n));
  ThreadGather gather(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      transport::SocketOptions o;
      o.setup_timeout_ms = 5000;
      if (options) options(r, &o);
      st[size_t(r)] = transport::CreateSocketTransport(r, n, gather.For(r, hook), o, &(*out)[size_t(r)]);
    });
  for (auto& t : threads) t.join();
  return st;
}

}  // namespace equarx::testing
