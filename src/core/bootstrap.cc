// equarx communicators over a caller's exchange (include/equarx/bootstrap.h), and the data
// paths' transports that CreateMpiCommunicator shares (core/data_path.h).
//
// CreateCommunicator's exchanges, in order, every rank the same:
//   1. the card   {"EQXB", version, rank, size, data path} per rank; every rank checks all of
//                 them (a wrong world size, a rank given twice, another data path: the error
//                 names the rank and what it said, on every rank that sees the cards);
//   2. the data path's own exchanges (DataPathExchanges: identities and addresses for TCP, the
//      segment's name for shared memory);
//   3. the outcome {"EQXO", ok} per rank, so that a rank whose connections failed makes every
//      rank fail instead of leaving them with a half-built mesh.
// A rank that fails before it has made all of 2 returns its error at once: the others' next
// exchange then times out (the caller's exchange bounds it) or their connections to it fail.
#include "equarx/bootstrap.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/env.h"
#include "core/data_path.h"
#include "transport/shm/host_transport.h"
#include "transport/shm/shm_transport.h"

namespace equarx {

const char* DataPathName(DataPath path) {
  switch (path) {
    case DataPath::kMpi: return "mpi";
    case DataPath::kSockets: return "sockets";
    case DataPath::kSharedMemory: return "shm";
    case DataPath::kHost: return "host";
  }
  return "?";
}

Status ParseDataPath(const std::string& name, DataPath* out) {
  for (DataPath p : {DataPath::kSockets, DataPath::kHost, DataPath::kSharedMemory, DataPath::kMpi}) {
    if (name == DataPathName(p)) {
      *out = p;
      return Status::Ok();
    }
  }
  return InvalidArgument("data path '" + name + "': expected sockets, host, shm or mpi");
}

Status BootstrapOptions::FromEnvironment(BootstrapOptions* out) {
  const env::Settings s = env::Read();
  BootstrapOptions o;
  Status st = ParseDataPath(s.data_path, &o.data_path);
  if (!st.ok()) return InvalidArgument("EQUARX_DATA_PATH: " + st.message());
  o.socket_interface = s.socket_ifname;
  for (const std::string& w : s.warnings)  // a refused value must not quietly mean "plaintext"
    if (w.rfind(std::string(env::knob::encrypt) + "=", 0) == 0)
      return InvalidArgument(w.substr(0, w.find(" ignored")) + ": expected 0 or 1");
  o.encrypt = s.encrypt != 0;
  *out = o;
  return Status::Ok();
}

namespace internal {

int DataPathExchanges(DataPath path) {
  switch (path) {
    case DataPath::kSockets: return 2;        // identities, addresses
    case DataPath::kSharedMemory: return 2;   // the segment's card, the joins
    case DataPath::kHost: return 5;           // both of the above and the host names
    case DataPath::kMpi: return 0;
  }
  return 0;
}

Status CreateDataPathTransport(DataPath path, int rank, int size, const transport::AllGather& allgather,
                               const transport::SocketOptions& so, std::unique_ptr<transport::Transport>* out) {
  switch (path) {
    case DataPath::kSharedMemory:
      return transport::CreateShmTransport(rank, size, allgather, transport::ShmOptions{}, out);
    case DataPath::kHost:
      return transport::CreateHostTransport(rank, size, allgather, so, transport::ShmOptions{}, out);
    case DataPath::kSockets:
      return transport::CreateSocketTransport(rank, size, allgather, so, out);
    case DataPath::kMpi: break;
  }
  return InvalidArgument(std::string("data path '") + DataPathName(path) + "' is not built over an all-gather");
}

}  // namespace internal

namespace {

constexpr uint32_t kCardVersion = 1;

struct Card {  // exchange 1; little-endian u32 fields
  char magic[4];
  uint32_t version, rank, size, data_path;
};

Status CheckCards(const std::vector<Card>& cards, int size, DataPath path) {
  for (int r = 0; r < size; ++r) {
    const Card& c = cards[size_t(r)];
    const std::string who = "set-up exchange: rank " + std::to_string(r);
    if (std::memcmp(c.magic, "EQXB", 4) != 0)
      return InvalidArgument(who + " sent no equarx card (another program, or a key reused by something else?)");
    if (c.version != kCardVersion)
      return InvalidArgument(who + " runs card version " + std::to_string(c.version) + ", this rank " +
                             std::to_string(kCardVersion) + " (mixed equarx versions)");
    if (c.size != uint32_t(size))
      return InvalidArgument(who + " says the group has " + std::to_string(c.size) + " ranks, this rank " +
                             std::to_string(size) + " (world size differs between ranks)");
    if (c.rank != uint32_t(r))
      return InvalidArgument(who + "'s slot holds rank " + std::to_string(c.rank) + "'s card (a rank given twice?)");
    if (c.data_path != uint32_t(path))
      return InvalidArgument(who + " asked for data path '" + DataPathName(DataPath(c.data_path)) +
                             "', this rank '" + DataPathName(path) + "' (EQUARX_DATA_PATH differs?)");
  }
  return Status::Ok();
}

}  // namespace

Status CreateCommunicator(int rank, int size, const AllGatherFn& allgather, const BootstrapOptions& options,
                          std::unique_ptr<Communicator>* out) {
  if (!out) return InvalidArgument("CreateCommunicator: out is null");
  if (!allgather) return InvalidArgument("CreateCommunicator: no exchange given");
  if (size < 1 || rank < 0 || rank >= size)
    return InvalidArgument("CreateCommunicator: rank " + std::to_string(rank) + " is not in a group of " +
                           std::to_string(size));
  if (options.setup_timeout_ms <= 0)
    return InvalidArgument("setup_timeout_ms must be positive (got " + std::to_string(options.setup_timeout_ms) + ")");
  const DataPath path = options.data_path;
  if (path != DataPath::kSockets && path != DataPath::kHost && path != DataPath::kSharedMemory)
    return InvalidArgument(std::string("CreateCommunicator: data path '") + DataPathName(path) +
                           "' needs MPI (CreateMpiCommunicator); use sockets, host or shm");
  const auto deadline = transport::Clock::now() + std::chrono::milliseconds(options.setup_timeout_ms);

  // 1. Cards.
  Card mine{{'E', 'Q', 'X', 'B'}, kCardVersion, uint32_t(rank), uint32_t(size), uint32_t(path)};
  std::vector<Card> cards(static_cast<size_t>(size));
  EQUARX_RETURN_IF_ERROR(allgather(&mine, sizeof mine, cards.data()));
  EQUARX_RETURN_IF_ERROR(CheckCards(cards, size, path));

  // 2. The data path.
  int made = 0;
  auto counted = [&](const void* p, size_t bytes, void* all) {
    ++made;
    return allgather(p, bytes, all);
  };
  transport::SocketOptions so;
  so.interface = options.socket_interface;
  so.encrypt = options.encrypt;
  so.setup_timeout_ms = options.setup_timeout_ms;
  so.setup_deadline = deadline;
  std::unique_ptr<transport::Transport> t;
  Status st = internal::CreateDataPathTransport(path, rank, size, counted, so, &t);
  if (!st.ok() && made < internal::DataPathExchanges(path)) return st;  // out of step with the others

  // 3. The outcome.
  struct Outcome {
    char magic[4];
    uint32_t ok;
  } verdict{{'E', 'Q', 'X', 'O'}, st.ok() ? 1u : 0u};
  std::vector<Outcome> all(static_cast<size_t>(size));
  const Status agreed = allgather(&verdict, sizeof verdict, all.data());
  if (!st.ok()) return st;  // this rank's own error says more than the agreement's
  EQUARX_RETURN_IF_ERROR(agreed);
  for (int r = 0; r < size; ++r) {
    if (std::memcmp(all[size_t(r)].magic, "EQXO", 4) != 0)
      return InvalidArgument("set-up exchange: rank " + std::to_string(r) + " is out of step (no outcome card)");
    if (!all[size_t(r)].ok)
      return RemoteError("data path set-up failed on rank " + std::to_string(r));
  }
  *out = std::make_unique<Communicator>(std::move(t));
  return Status::Ok();
}

}  // namespace equarx
