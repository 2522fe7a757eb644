// equarx socket transport — cryptography from OpenSSL (see crypto.h).
#include "transport/socket/crypto.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <string>

namespace equarx::transport {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1) std::abort();
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::Update(const void* data, size_t bytes) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, bytes) != 1) std::abort();
}

Digest Sha256::Finish() {
  Digest d{};
  unsigned n = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), d.data(), &n) != 1 || n != d.size()) std::abort();
  return d;
}

Digest HmacSha256(const void* key, size_t key_bytes, const void* message, size_t message_bytes) {
  Digest d{};
  unsigned n = 0;
  static const uint8_t kEmpty = 0;  // HMAC() takes no null key, even of length 0
  if (!HMAC(EVP_sha256(), key_bytes ? key : &kEmpty, int(key_bytes), static_cast<const uint8_t*>(message),
            message_bytes, d.data(), &n) ||
      n != d.size())
    std::abort();
  return d;
}

bool ConstantTimeEqual(const void* a, const void* b, size_t n) { return CRYPTO_memcmp(a, b, n) == 0; }

Status OsRandom(void* out, size_t n) {
  if (RAND_bytes(static_cast<unsigned char*>(out), int(n)) == 1) return Status::Ok();
  return Internal("OpenSSL RAND_bytes failed (error " + std::to_string(ERR_get_error()) + ")");
}

void Wipe(void* p, size_t n) { OPENSSL_cleanse(p, n); }

}  // namespace equarx::transport
