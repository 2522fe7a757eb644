// Fuzz harness: the socket handshake's message parsers (src/transport/socket/
// socket_handshake.h) on arbitrary bytes, as an acceptor sees a HELLO and a PROOF and a
// connector sees a CHALLENGE. Invariants: no crash; without the secret no input is accepted
// as a CHALLENGE or a PROOF (a forged MAC would be a broken HMAC, not something to find by
// mutation, so acceptance means the parser ignored the MAC); a HELLO that decodes re-encodes
// to the same bytes.
#include <cstdint>
#include <cstring>

#include "fuzz_input.h"
#include "transport/socket/socket_handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace equarx::transport::handshake;
  namespace fuzz = equarx::fuzz;
  uint8_t hello_bytes[kHelloBytes] = {}, challenge[kChallengeBytes] = {}, proof[kProofBytes] = {};
  const size_t a = std::min(size, kHelloBytes);
  std::memcpy(hello_bytes, data, a);
  const size_t b = std::min(size - a, kChallengeBytes);
  std::memcpy(challenge, data + a, b);
  std::memcpy(proof, data + a + b, std::min(size - a - b, kProofBytes));

  Secret k;
  for (size_t i = 0; i < sizeof k.bytes; ++i) k.bytes[i] = uint8_t(i * 37 + 11);
  Hello h;
  if (DecodeHello(hello_bytes, &h)) {
    uint8_t again[kHelloBytes];
    EncodeHello(h, again);
    if (std::memcmp(again, hello_bytes, kHelloBytes) != 0) fuzz::Fail("HELLO does not re-encode to its bytes");
  }
  uint8_t out[kProofBytes];
  if (AnswerChallenge(k, h, challenge, out)) fuzz::Fail("accepted a CHALLENGE made without the secret");
  uint8_t nonce_a[kNonceBytes];
  std::memcpy(nonce_a, challenge + 4, kNonceBytes);
  if (CheckProof(k, h, nonce_a, proof)) fuzz::Fail("accepted a PROOF made without the secret");
  // The genuine exchange still works with the fuzzed hello and nonce.
  uint8_t real_challenge[kChallengeBytes], real_proof[kProofBytes];
  if (!MakeChallenge(k, h, nonce_a, real_challenge).ok()) return 0;
  if (!AnswerChallenge(k, h, real_challenge, real_proof)) fuzz::Fail("genuine CHALLENGE rejected");
  if (!CheckProof(k, h, nonce_a, real_proof)) fuzz::Fail("genuine PROOF rejected");
  return 0;
}
