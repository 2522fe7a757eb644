// The setup handshake's messages and MACs (see socket_handshake.h for the protocol).
#include "transport/socket/socket_handshake.h"

#include <cstring>

namespace equarx::transport::handshake {

void DeriveSecret(const uint8_t* shares, int n, bool encrypted, Secret* out) {
  const char* label = encrypted ? "equarx socket secret v1 encrypted" : "equarx socket secret v1";
  uint8_t count[4];
  PutU32(count, uint32_t(n));
  Sha256 h;
  h.Update(label, std::strlen(label));
  h.Update(count, sizeof count);
  h.Update(shares, size_t(n) * kShareBytes);
  Digest d = h.Finish();
  std::memcpy(out->bytes, d.data(), sizeof out->bytes);
  Wipe(d.data(), d.size());
}

bool IsMagic(const uint8_t* p, const char* magic) { return std::memcmp(p, magic, kMagicBytes) == 0; }

void EncodeHello(const Hello& h, uint8_t out[kHelloBytes]) {
  std::memcpy(out, kHelloMagic, kMagicBytes);
  PutU32(out + 4, h.version);
  PutU32(out + 8, h.size);
  PutU32(out + 12, h.from);
  PutU32(out + 16, h.to);
  std::memcpy(out + 20, h.nonce_c, kNonceBytes);
}

bool DecodeHello(const uint8_t in[kHelloBytes], Hello* out) {
  if (!IsMagic(in, kHelloMagic)) return false;
  out->version = GetU32(in + 4);
  out->size = GetU32(in + 8);
  out->from = GetU32(in + 12);
  out->to = GetU32(in + 16);
  std::memcpy(out->nonce_c, in + 20, kNonceBytes);
  return true;
}

Digest Mac(const Secret& k, Role role, const Hello& h, const uint8_t nonce_a[kNonceBytes]) {
  const char* label = role == Role::kAcceptor ? "equarx socket v1 acceptor" : "equarx socket v1 connector";
  const size_t label_len = std::strlen(label);
  uint8_t m[32 + 12 + 2 * kNonceBytes];
  std::memcpy(m, label, label_len);
  uint8_t* p = m + label_len;
  PutU32(p, h.size);
  PutU32(p + 4, h.from);
  PutU32(p + 8, h.to);
  std::memcpy(p + 12, h.nonce_c, kNonceBytes);
  std::memcpy(p + 12 + kNonceBytes, nonce_a, kNonceBytes);
  return HmacSha256(k.bytes, sizeof k.bytes, m, label_len + 12 + 2 * kNonceBytes);
}

DataKeys& DataKeys::operator=(const DataKeys& o) {
  std::memcpy(send, o.send, sizeof send);
  std::memcpy(recv, o.recv, sizeof recv);
  return *this;
}

void DeriveDataKeys(const Secret& k, Role role, const Hello& h, const uint8_t nonce_a[kNonceBytes], DataKeys* out) {
  static const char kLabel[] = "equarx socket v1 data keys";
  uint8_t info[sizeof kLabel - 1 + 12], salt[2 * kNonceBytes], keys[2 * Aes256Gcm::kKeyBytes];
  std::memcpy(info, kLabel, sizeof kLabel - 1);
  PutU32(info + sizeof kLabel - 1, h.size);
  PutU32(info + sizeof kLabel + 3, h.from);
  PutU32(info + sizeof kLabel + 7, h.to);
  std::memcpy(salt, h.nonce_c, kNonceBytes);
  std::memcpy(salt + kNonceBytes, nonce_a, kNonceBytes);
  HkdfSha256(k.bytes, sizeof k.bytes, salt, sizeof salt, info, sizeof info, keys, sizeof keys);
  const uint8_t* from_connector = keys;
  const uint8_t* from_acceptor = keys + Aes256Gcm::kKeyBytes;
  const bool connector = role == Role::kConnector;
  std::memcpy(out->send, connector ? from_connector : from_acceptor, Aes256Gcm::kKeyBytes);
  std::memcpy(out->recv, connector ? from_acceptor : from_connector, Aes256Gcm::kKeyBytes);
  Wipe(keys, sizeof keys);
}

Status MakeChallenge(const Secret& k, const Hello& h, uint8_t nonce_a[kNonceBytes],
                     uint8_t out[kChallengeBytes]) {
  EQUARX_RETURN_IF_ERROR(OsRandom(nonce_a, kNonceBytes));
  const Digest mac = Mac(k, Role::kAcceptor, h, nonce_a);
  std::memcpy(out, kChallengeMagic, kMagicBytes);
  std::memcpy(out + 4, nonce_a, kNonceBytes);
  std::memcpy(out + 4 + kNonceBytes, mac.data(), mac.size());
  return Status::Ok();
}

bool AnswerChallenge(const Secret& k, const Hello& h, const uint8_t in[kChallengeBytes],
                     uint8_t proof[kProofBytes]) {
  if (!IsMagic(in, kChallengeMagic)) return false;
  const uint8_t* nonce_a = in + 4;
  const Digest want = Mac(k, Role::kAcceptor, h, nonce_a);
  if (!ConstantTimeEqual(want.data(), in + 4 + kNonceBytes, want.size())) return false;
  const Digest mine = Mac(k, Role::kConnector, h, nonce_a);
  std::memcpy(proof, kProofMagic, kMagicBytes);
  std::memcpy(proof + 4, mine.data(), mine.size());
  return true;
}

bool CheckProof(const Secret& k, const Hello& h, const uint8_t nonce_a[kNonceBytes],
                const uint8_t in[kProofBytes]) {
  if (!IsMagic(in, kProofMagic)) return false;
  const Digest want = Mac(k, Role::kConnector, h, nonce_a);
  return ConstantTimeEqual(want.data(), in + 4, want.size());
}

}  // namespace equarx::transport::handshake
