// equarx socket transport — SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), the keyed PRF
// that lets two ranks prove to each other that they know the communicator's secret without
// sending it (socket_handshake.h). Written from the published specifications; the tests
// check the specifications' own vectors (FIPS 180-2 appendix examples, RFC 4231).
//
// Also here: the OS random source (getrandom) for secrets and nonces, and a comparison whose
// time does not depend on where two byte strings first differ.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "equarx/status.h"

namespace equarx::transport {

using Digest = std::array<uint8_t, 32>;

/// Incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t bytes);
  Digest Finish();  ///< the digest; the object must not be updated afterwards

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes hashed so far
};

/// HMAC-SHA-256 of `message` under `key` (any key length; keys over 64 bytes are hashed).
Digest HmacSha256(const void* key, size_t key_bytes, const void* message, size_t message_bytes);

/// True iff the `n` bytes at a and b are equal; the time taken depends only on n.
bool ConstantTimeEqual(const void* a, const void* b, size_t n);

/// Fills `out` with `n` bytes from the kernel's CSPRNG (getrandom(2), blocking until the pool
/// is initialised). An error only if the kernel refuses (e.g. no getrandom, seccomp).
Status OsRandom(void* out, size_t n);

/// Overwrites `n` bytes so that the compiler cannot drop the stores (for secrets).
void Wipe(void* p, size_t n);

}  // namespace equarx::transport
