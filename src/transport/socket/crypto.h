// equarx socket transport — the cryptography of the socket data path, from OpenSSL (libcrypto):
// SHA-256 and HMAC-SHA-256, the keyed PRF that lets two ranks prove to each other that they
// know the communicator's secret without sending it (socket_handshake.h); HKDF-SHA-256, which
// derives the keys of an encrypted connection from that secret; AES-256-GCM, which seals the
// records of an encrypted connection (encrypted_streams.h); the random source of secrets and
// nonces; a comparison whose time does not depend on where two byte strings first differ; and
// a wipe the compiler cannot drop. No cryptography is written here by hand: every function is
// a thin wrapper of libcrypto's. The tests check the published vectors (FIPS 180-2 appendix
// examples, RFC 4231, RFC 5869, the GCM specification's AES-256 test cases) through these
// wrappers.
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

/// HKDF-SHA-256 (RFC 5869, extract then expand): `out_bytes` (at most 8160) bytes of key
/// material from the input key `ikm`, the `salt` (may be empty) and the context `info`.
void HkdfSha256(const void* ikm, size_t ikm_bytes, const void* salt, size_t salt_bytes, const void* info,
                size_t info_bytes, uint8_t* out, size_t out_bytes);

/// AES-256-GCM with 96-bit nonces and 128-bit tags (OpenSSL's EVP interface). One object seals
/// or opens messages under one key at a time; the key schedule and the context are made once
/// and reused, so sealing and opening allocate nothing. A message is processed in steps, so
/// that its plaintext may be gathered from several pieces:
///   Start(nonce, aad) Update(...)* then SealFinish(tag) or OpenFinish(tag).
/// Opening writes plaintext before the tag is checked: the caller must not use it (and should
/// wipe it) unless OpenFinish returns true.
class Aes256Gcm {
 public:
  static constexpr size_t kKeyBytes = 32, kNonceBytes = 12, kTagBytes = 16;
  enum class Use { kSeal, kOpen };
  explicit Aes256Gcm(Use use);
  ~Aes256Gcm();
  Aes256Gcm(const Aes256Gcm&) = delete;
  Aes256Gcm& operator=(const Aes256Gcm&) = delete;
  void SetKey(const uint8_t key[kKeyBytes]);
  /// Begins a message with `nonce` (never reuse one under a key) and authenticated data `aad`.
  void Start(const uint8_t nonce[kNonceBytes], const void* aad, size_t aad_bytes);
  /// Encrypts (seal) or decrypts (open) `n` bytes from `in` to `out` (in == out is allowed).
  void Update(const void* in, size_t n, void* out);
  /// Ends a sealed message: its tag.
  void SealFinish(uint8_t tag[kTagBytes]);
  /// Ends an opened message: true iff `tag` authenticates the nonce, the aad and the ciphertext.
  [[nodiscard]] bool OpenFinish(const uint8_t tag[kTagBytes]);

 private:
  void* ctx_;  // EVP_CIPHER_CTX
  Use use_;
};

/// True iff the `n` bytes at a and b are equal; the time taken depends only on n.
bool ConstantTimeEqual(const void* a, const void* b, size_t n);

/// Fills `out` with `n` bytes from OpenSSL's CSPRNG (seeded by the kernel). An error only if
/// it cannot be seeded.
Status OsRandom(void* out, size_t n);

/// Overwrites `n` bytes so that the compiler cannot drop the stores (for secrets).
void Wipe(void* p, size_t n);

}  // namespace equarx::transport
