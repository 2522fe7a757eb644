// Threads as socket transport ranks (see socket_mesh.h).
#include "support/socket_mesh.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "world.h"

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

namespace {

// Runs Create(rank, n, gather, options, &transport) on n ranks (tools::RunOnRanks); `options`
// edits each rank's defaults.
template <typename Options, typename Create>
std::vector<Status> ThreadMesh(int n, std::vector<std::unique_ptr<transport::Transport>>* out,
                               Options defaults, const std::function<void(int, Options*)>& options,
                               const GatherHook& hook, Create create) {
  out->clear();
  out->resize(size_t(n));
  ThreadGather gather(n);
  return tools::RunOnRanks(n, [&](int r) {
    Options o = defaults;
    if (options) options(r, &o);
    return create(r, n, gather.For(r, hook), o, &(*out)[size_t(r)]);
  });
}

}  // namespace

std::vector<Status> SocketMesh(int n, std::vector<std::unique_ptr<transport::Transport>>* out,
                               const std::function<void(int, transport::SocketOptions*)>& options,
                               const GatherHook& hook) {
  transport::SocketOptions defaults;
  defaults.setup_timeout_ms = 5000;
  return ThreadMesh(n, out, defaults, options, hook, transport::CreateSocketTransport);
}

std::vector<Status> ShmMesh(int n, std::vector<std::unique_ptr<transport::Transport>>* out,
                            const std::function<void(int, transport::ShmOptions*)>& options) {
  return ThreadMesh(n, out, transport::ShmOptions{}, options, nullptr, transport::CreateShmTransport);
}

std::vector<Status> HostMesh(int n, std::vector<std::unique_ptr<transport::Transport>>* out,
                             const std::function<std::string(int)>& hosts,
                             const std::function<void(int, transport::SocketOptions*)>& options) {
  transport::SocketOptions defaults;
  defaults.setup_timeout_ms = 5000;
  return ThreadMesh(
      n, out, defaults, std::function<void(int, transport::SocketOptions*)>([&](int r, transport::SocketOptions* o) {
        o->host_name = hosts(r);
        if (options) options(r, o);
      }),
      nullptr, [](int r, int size, const transport::AllGather& g, const transport::SocketOptions& o,
                  std::unique_ptr<transport::Transport>* t) {
        return transport::CreateHostTransport(r, size, g, o, transport::ShmOptions{}, t);
      });
}

OneRealRank::OneRealRank(const transport::SocketOptions& rank0_options) : gather_(2) {
  namespace hs = transport::handshake;
  thread_ = std::thread([this, rank0_options] {
    status_ = transport::CreateSocketTransport(0, 2, gather_.For(0), rank0_options, &transport_);
  });
  hs::IdentityCard id{}, ids[2];
  id.magic = hs::kIdentityMagic;
  id.ok = 1;
  id.encrypt = rank0_options.encrypt ? 1 : 0;
  gethostname(id.host, sizeof id.host - 1);
  EXPECT_TRUE(transport::OsRandom(id.share, sizeof id.share).ok());
  EXPECT_TRUE(gather_.For(1)(&id, sizeof id, ids).ok());
  uint8_t shares[2 * hs::kShareBytes];
  for (int r = 0; r < 2; ++r) std::memcpy(shares + r * hs::kShareBytes, ids[r].share, hs::kShareBytes);
  hs::DeriveSecret(shares, 2, rank0_options.encrypt, &secret_);
  hs::AddressCard card{}, cards[2];
  card.magic = hs::kAddressMagic;
  card.ok = 1;
  card.addr = htonl(INADDR_LOOPBACK);  // rank 0 never connects to rank 1
  EXPECT_TRUE(gather_.For(1)(&card, sizeof card, cards).ok());
  rank0_ = {0, cards[0].addr, cards[0].port};
}

void OneRealRank::Join() {
  if (thread_.joinable()) thread_.join();
}

int OneRealRank::ConnectAsRank1(transport::handshake::DataKeys* keys) {
  int fd = -1;
  std::string why;
  EXPECT_TRUE(rogue::AuthenticatedConnect(rank0_, secret_, 2, 1, &fd, &why, keys)) << why;
  Join();
  EXPECT_TRUE(status_.ok()) << status_.ToString();
  return fd;
}

}  // namespace equarx::testing
