// equarx socket transport — everything connection setup puts on a wire: the two cards each
// rank publishes through the caller's all-gather (the trusted bootstrap channel, MPI in
// practice), and the handshake by which every TCP connection proves, in both directions, that
// both ends know the communicator's secret without sending it.
//
// Secret: every rank draws 32 bytes from OpenSSL's CSPRNG (RAND_bytes) and publishes them on its identity card;
// the communicator's secret is K = SHA-256(label || n || share_0 || ... || share_{n-1}), as
// strong as the best rank's random draw, with label "equarx socket secret v1" (or "equarx
// socket secret v1 encrypted" when the data path is encrypted: K, and so every MAC below,
// binds the mode). It never travels over TCP. The card also says whether the rank encrypts;
// ranks that disagree all fail at that first exchange.
//
// Handshake (rank i connects to rank j < i; integers little-endian u32; nonces from RAND_bytes):
//
//   connector (rank i)                                        acceptor (rank j)
//   HELLO     "EQXH" version=1 n i j nonce_c[16]    36 B  ->
//                                                      <-  52 B  CHALLENGE "EQXC" nonce_a[16] mac_a[32]
//   check mac_a == MAC("acceptor")
//   PROOF     "EQXP" mac_c[32]                      36 B  ->
//                                                              check mac_c == MAC("connector")
//                                                      <-   4 B  VERDICT "EQOK" (or "EQNO", then close)
//
//   MAC(role) = HMAC-SHA-256(K, "equarx socket v1 " role || n || i || j || nonce_c || nonce_a)
//
// Both nonces are fresh per connection, so a recorded exchange cannot be replayed; the role
// label keeps an acceptor's MAC from serving as a connector's (no reflection); n, i and j bind
// the proof to this group and this pair. MACs are compared in constant time. Every message has
// a fixed size, so nothing read during setup is ever sized by the peer. After the verdict the
// connection carries the data frames of the stream transport (src/transport/stream/): as they
// are, or (encrypted mode) sealed into AES-256-GCM records (encrypted_streams.h) under keys
// that both ends derive from K and this connection's handshake before K is wiped:
//
//   keys = HKDF-SHA-256(ikm K, salt nonce_c || nonce_a, info "equarx socket v1 data keys" || n || i || j)
//   the first 32 bytes seal what the connector sends, the next 32 what the acceptor sends.
#pragma once

#include <cstddef>
#include <cstdint>

#include "equarx/status.h"
#include "transport/socket/crypto.h"

namespace equarx::transport::handshake {

constexpr uint32_t kVersion = 1;
constexpr size_t kNonceBytes = 16;
constexpr size_t kShareBytes = 32;
constexpr size_t kMagicBytes = 4;
constexpr size_t kHelloBytes = 4 + 4 * 4 + kNonceBytes;      // 36
constexpr size_t kChallengeBytes = 4 + kNonceBytes + 32;     // 52
constexpr size_t kProofBytes = 4 + 32;                       // 36
constexpr size_t kVerdictBytes = 4;

// Magics as they appear on the wire (first four bytes of each message).
constexpr char kHelloMagic[] = "EQXH";
constexpr char kChallengeMagic[] = "EQXC";
constexpr char kProofMagic[] = "EQXP";
constexpr char kAccept[] = "EQOK";
constexpr char kReject[] = "EQNO";

/// The communicator's secret (wiped when the setup that derived it ends).
struct Secret {
  uint8_t bytes[32] = {};
  ~Secret() { Wipe(bytes, sizeof bytes); }
};

/// Published by every rank in the first all-gather: who it is and its share of the secret.
struct IdentityCard {
  uint32_t magic;   // kIdentityMagic
  uint32_t ok;      // 0: this rank failed before listening; `error` says why
  char host[64];    // gethostname(): equal names mean one host
  uint8_t share[kShareBytes];
  uint32_t encrypt;  // 1: this rank encrypts the data path (SocketOptions::encrypt)
  char error[108];
};
static_assert(sizeof(IdentityCard) == 216, "IdentityCard layout");
constexpr uint32_t kIdentityMagic = 0x31445145;  // "EQD1"

/// Published in the second all-gather: where this rank listens.
struct AddressCard {
  uint32_t magic;  // kAddressMagic
  uint32_t ok;
  uint32_t addr;   // IPv4, network byte order
  uint16_t port;   // network byte order
  uint16_t pad;
  char error[112];
};
static_assert(sizeof(AddressCard) == 128, "AddressCard layout");
constexpr uint32_t kAddressMagic = 0x31415145;  // "EQA1"

/// K from every rank's share (`n` shares of kShareBytes, in rank order), for the mode.
void DeriveSecret(const uint8_t* shares, int n, bool encrypted, Secret* out);

struct Hello {
  uint32_t version = kVersion;
  uint32_t size = 0, from = 0, to = 0;  // group size, connector's rank, acceptor's rank
  uint8_t nonce_c[kNonceBytes] = {};
};

/// Little-endian u32 on the wire (the handshake's integers, an encrypted record's length).
inline void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline uint32_t GetU32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

/// True when the first four bytes at `p` are `magic`.
bool IsMagic(const uint8_t* p, const char* magic);

void EncodeHello(const Hello& h, uint8_t out[kHelloBytes]);
/// False if the bytes do not start with the hello magic.
bool DecodeHello(const uint8_t in[kHelloBytes], Hello* out);

enum class Role { kAcceptor, kConnector };
/// The MAC that `role` sends for the connection described by `h` and the acceptor's nonce.
Digest Mac(const Secret& k, Role role, const Hello& h, const uint8_t nonce_a[kNonceBytes]);

/// CHALLENGE for `h`: a fresh nonce_a and the acceptor's MAC. Keeps nonce_a in `nonce_a`.
Status MakeChallenge(const Secret& k, const Hello& h, uint8_t nonce_a[kNonceBytes],
                     uint8_t out[kChallengeBytes]);
/// Connector side: true iff `in` is a CHALLENGE whose MAC proves the acceptor knows K; then
/// writes the PROOF to send back.
bool AnswerChallenge(const Secret& k, const Hello& h, const uint8_t in[kChallengeBytes],
                     uint8_t proof[kProofBytes]);
/// The keys of an encrypted connection, one per direction (wiped when destroyed).
struct DataKeys {
  uint8_t send[Aes256Gcm::kKeyBytes] = {};
  uint8_t recv[Aes256Gcm::kKeyBytes] = {};
  DataKeys() = default;
  DataKeys(const DataKeys& o) { *this = o; }
  DataKeys& operator=(const DataKeys& o);
  ~DataKeys() {
    Wipe(send, sizeof send);
    Wipe(recv, sizeof recv);
  }
};
/// The keys of the connection `h` and nonce_a describe, as the end playing `role` uses them.
void DeriveDataKeys(const Secret& k, Role role, const Hello& h, const uint8_t nonce_a[kNonceBytes], DataKeys* out);

/// Acceptor side: true iff `in` is a PROOF that the connector knows K.
bool CheckProof(const Secret& k, const Hello& h, const uint8_t nonce_a[kNonceBytes],
                const uint8_t in[kProofBytes]);

}  // namespace equarx::transport::handshake
