// A rogue client of the socket transport's setup, over real TCP: it connects to a rank's
// listener and misbehaves in one of several ways, then watches what the rank does with the
// connection. Used in-process by tests/unit/socket_security_test.cc (threads as ranks) and,
// through tests/tools/rogue_client_main.cc, by a separate process under mpirun.
//
// It can also play a real rank that knows the secret (AuthenticatedConnect): the positive
// control for the handshake, and the way to reach the data loop with a hostile frame header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/socket/socket_handshake.h"

namespace equarx::testing::rogue {

enum class Attack {
  kWrongSecret,      // a well-formed hello, then a proof made with a wrong secret
  kOldHello,         // the pre-authentication hello: {"EQXR" magic, rank, size}, 12 bytes
  kSilent,           // connects and sends nothing
  kGarbage,          // 4 KiB of random bytes
  kClaimThenSilent,  // a well-formed hello claiming a real rank, then silence
};
const char* AttackName(Attack a);
std::vector<Attack> AllAttacks();

/// Where a rank listens (from its AddressCard: network byte order).
struct Target {
  int rank = 0;
  uint32_t addr = 0;
  uint16_t port = 0;
};
std::string TargetName(const Target& t);

/// One misbehaving connection. Start() connects and sends the attack's bytes (it returns once
/// they are in the kernel); Watch() waits up to `ms` for the rank to close the connection.
class Connection {
 public:
  Connection(Attack a, Target t, int group_size) : attack_(a), target_(t), size_(group_size) {}
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// False (and `detail`) if the TCP connection could not be opened.
  bool Start();
  /// Reads whatever the rank sends (answering a challenge with a wrong proof) until it closes
  /// the connection or `ms` pass. True iff it closed it.
  bool Watch(int ms);
  /// What happened, in words (e.g. "rejected with EQNO, then closed after 3 ms").
  const std::string& detail() const { return detail_; }
  Attack attack() const { return attack_; }
  const Target& target() const { return target_; }

 private:
  Attack attack_;
  Target target_;
  int size_;
  int fd_ = -1;
  std::string detail_;
  std::string seen_;  // what the rank sent
  transport::handshake::Hello hello_;
};

/// Connects to `t` and returns its errno-style outcome: 0 if a TCP connection was made (then
/// `*fd` is open), else the connect() error (ECONNREFUSED when nothing listens).
int TryConnect(const Target& t, int* fd);

/// Plays rank `from` connecting to rank `t.rank` with the secret `k`: true iff the rank
/// accepted (then `*fd` is the authenticated connection, blocking). `why` on failure. With
/// `keys`, also derives the connection's data keys as the connector uses them.
bool AuthenticatedConnect(const Target& t, const transport::handshake::Secret& k, int group_size, int from,
                          int* fd, std::string* why, transport::handshake::DataKeys* keys = nullptr);

}  // namespace equarx::testing::rogue
