// equarx socket transport — cryptography from OpenSSL (see crypto.h).
#include "transport/socket/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <climits>
#include <cstdlib>
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

void HkdfSha256(const void* ikm, size_t ikm_bytes, const void* salt, size_t salt_bytes, const void* info,
                size_t info_bytes, uint8_t* out, size_t out_bytes) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  EVP_KDF_CTX* ctx = kdf ? EVP_KDF_CTX_new(kdf) : nullptr;
  EVP_KDF_free(kdf);
  static const uint8_t kNone = 0;  // OpenSSL takes no null pointer, even of length 0
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<void*>(ikm_bytes ? ikm : &kNone), ikm_bytes),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<void*>(salt_bytes ? salt : &kNone),
                                        salt_bytes),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<void*>(info_bytes ? info : &kNone),
                                        info_bytes),
      OSSL_PARAM_construct_end()};
  const bool ok = ctx && EVP_KDF_derive(ctx, out, out_bytes, params) == 1;
  EVP_KDF_CTX_free(ctx);
  if (!ok) std::abort();
}

Aes256Gcm::Aes256Gcm(Use use) : ctx_(EVP_CIPHER_CTX_new()), use_(use) {
  if (!ctx_ || EVP_CipherInit_ex(static_cast<EVP_CIPHER_CTX*>(ctx_), EVP_aes_256_gcm(), nullptr, nullptr, nullptr,
                                 use == Use::kSeal ? 1 : 0) != 1)
    std::abort();
}

Aes256Gcm::~Aes256Gcm() { EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(ctx_)); }  // cleanses the key schedule

void Aes256Gcm::SetKey(const uint8_t key[kKeyBytes]) {
  if (EVP_CipherInit_ex(static_cast<EVP_CIPHER_CTX*>(ctx_), nullptr, nullptr, key, nullptr, -1) != 1) std::abort();
}

void Aes256Gcm::Start(const uint8_t nonce[kNonceBytes], const void* aad, size_t aad_bytes) {
  auto* c = static_cast<EVP_CIPHER_CTX*>(ctx_);
  int n = 0;
  if (EVP_CipherInit_ex(c, nullptr, nullptr, nullptr, nonce, -1) != 1 ||
      (aad_bytes && EVP_CipherUpdate(c, nullptr, &n, static_cast<const uint8_t*>(aad), int(aad_bytes)) != 1))
    std::abort();
}

void Aes256Gcm::Update(const void* in, size_t n, void* out) {
  auto* c = static_cast<EVP_CIPHER_CTX*>(ctx_);
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  while (n > 0) {  // EVP takes int lengths; GCM is a stream cipher, so out == in in length
    const int step = n > size_t(INT_MAX / 2) ? INT_MAX / 2 : int(n);
    int done = 0;
    if (EVP_CipherUpdate(c, dst, &done, src, step) != 1 || done != step) std::abort();
    src += step;
    dst += step;
    n -= size_t(step);
  }
}

void Aes256Gcm::SealFinish(uint8_t tag[kTagBytes]) {
  auto* c = static_cast<EVP_CIPHER_CTX*>(ctx_);
  int n = 0;
  uint8_t none[16];
  if (use_ != Use::kSeal || EVP_CipherFinal_ex(c, none, &n) != 1 ||
      EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, int(kTagBytes), tag) != 1)
    std::abort();
}

bool Aes256Gcm::OpenFinish(const uint8_t tag[kTagBytes]) {
  auto* c = static_cast<EVP_CIPHER_CTX*>(ctx_);
  int n = 0;
  uint8_t none[16];
  if (use_ != Use::kOpen || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, int(kTagBytes), const_cast<uint8_t*>(tag)) != 1)
    std::abort();
  return EVP_CipherFinal_ex(c, none, &n) == 1;
}

bool ConstantTimeEqual(const void* a, const void* b, size_t n) { return CRYPTO_memcmp(a, b, n) == 0; }

Status OsRandom(void* out, size_t n) {
  if (RAND_bytes(static_cast<unsigned char*>(out), int(n)) == 1) return Status::Ok();
  return Internal("OpenSSL RAND_bytes failed (error " + std::to_string(ERR_get_error()) + ")");
}

void Wipe(void* p, size_t n) { OPENSSL_cleanse(p, n); }

}  // namespace equarx::transport
