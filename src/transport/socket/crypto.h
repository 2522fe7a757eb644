// equarx socket transport — the cryptography of the handshake, from OpenSSL (libcrypto):
// SHA-256 and HMAC-SHA-256, the keyed PRF that lets two ranks prove to each other that they
// know the communicator's secret without sending it (socket_handshake.h); the random source of
// secrets and nonces; a comparison whose time does not depend on where two byte strings first
// differ; and a wipe the compiler cannot drop. The tests check the published vectors (FIPS
// 180-2 appendix examples, RFC 4231) through these wrappers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "equarx/status.h"

namespace equarx::transport {

using Digest = std::array<uint8_t, 32>;

/// Incremental SHA-256 (OpenSSL's EVP interface).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(const void* data, size_t bytes);
  Digest Finish();  ///< the digest; the object must not be updated afterwards

 private:
  void* ctx_;  // EVP_MD_CTX
};

/// HMAC-SHA-256 of `message` under `key` (any key length; keys over 64 bytes are hashed).
Digest HmacSha256(const void* key, size_t key_bytes, const void* message, size_t message_bytes);

/// True iff the `n` bytes at a and b are equal; the time taken depends only on n.
bool ConstantTimeEqual(const void* a, const void* b, size_t n);

/// Fills `out` with `n` bytes from OpenSSL's CSPRNG (seeded by the kernel). An error only if
/// it cannot be seeded.
Status OsRandom(void* out, size_t n);

/// Overwrites `n` bytes so that the compiler cannot drop the stores (for secrets).
void Wipe(void* p, size_t n);

}  // namespace equarx::transport
