// SHA-256, HMAC-SHA-256, HKDF-SHA-256 and AES-256-GCM (OpenSSL's, through
// src/transport/socket/crypto.h) against the specifications' own test vectors: the FIPS 180-2
// appendix examples (one block, two blocks, one million 'a'), the empty message, the 896-bit
// FIPS 180-2 SHA-512 example message, RFC 4231 test cases 1-7 for HMAC-SHA-256, RFC 5869 test
// cases 1-3 for HKDF-SHA-256, and the AES-256 test cases 13-16 of McGrew and Viega's GCM
// specification (sealing and opening, whole and in pieces; any changed byte of ciphertext,
// tag, nonce or additional data fails to open). Also: hashing in pieces equals hashing at
// once, and the constant-time comparison. Every expected value was also cross-checked against
// an independent implementation (Python's hashlib/hmac, and a few lines of HKDF over hmac).
#include "transport/socket/crypto.h"

#include <gtest/gtest.h>

#include "support/harness.h"

#include <cstring>
#include <string>
#include <vector>

namespace equarx::transport {
namespace {

using testing::HexOf;

std::string Hex(const Digest& d, size_t n = 32) { return HexOf(d.data(), n); }

std::string Sha(const std::string& m) {
  Sha256 h;
  h.Update(m.data(), m.size());
  return Hex(h.Finish());
}

std::string Hmac(const std::string& key, const std::string& m, size_t n = 32) {
  return Hex(HmacSha256(key.data(), key.size(), m.data(), m.size()), n);
}

TEST(Sha256, Fips180Examples) {
  EXPECT_EQ(Sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(Sha(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesEqualWhole) {
  std::string m;
  for (int i = 0; i < 1000; ++i) m += char(i * 131 + 7);
  // Every split point around the 55/56/64-byte padding boundaries and beyond.
  for (size_t len : {size_t(0), size_t(55), size_t(56), size_t(63), size_t(64), size_t(65), size_t(119), size_t(1000)})
    for (size_t cut = 0; cut <= len; cut += (len > 130 ? 97 : 1)) {
      Sha256 h;
      h.Update(m.data(), cut);
      h.Update(m.data() + cut, len - cut);
      EXPECT_EQ(Hex(h.Finish()), Sha(m.substr(0, len))) << len << " cut " << cut;
    }
}

TEST(HmacSha256, Rfc4231TestCases) {
  // 4.2 Test Case 1
  EXPECT_EQ(Hmac(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // 4.3 Test Case 2: a key shorter than the output
  EXPECT_EQ(Hmac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // 4.4 Test Case 3
  EXPECT_EQ(Hmac(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  // 4.5 Test Case 4
  std::string k4;
  for (int i = 1; i <= 25; ++i) k4 += char(i);
  EXPECT_EQ(Hmac(k4, std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // 4.6 Test Case 5: output truncated to 128 bits
  EXPECT_EQ(Hmac(std::string(20, '\x0c'), "Test With Truncation", 16), "a3b6167473100ee06e0c796c2955552b");
  // 4.7 Test Case 6: a key larger than the block (hashed first)
  EXPECT_EQ(Hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  // 4.8 Test Case 7: large key and large data
  EXPECT_EQ(Hmac(std::string(131, '\xaa'),
                 "This is a test using a larger than block-size key and a larger than block-size data. "
                 "The key needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, ConstantTimeEqualAndRandom) {
  const uint8_t a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 5}, c[4] = {0, 2, 3, 4};
  EXPECT_TRUE(ConstantTimeEqual(a, a, 4));
  EXPECT_FALSE(ConstantTimeEqual(a, b, 4));
  EXPECT_FALSE(ConstantTimeEqual(a, c, 4));
  EXPECT_TRUE(ConstantTimeEqual(a, b, 3));
  EXPECT_TRUE(ConstantTimeEqual(a, b, 0));
  // Two 32-byte draws from the kernel are never equal (probability 2^-256) and never all zero.
  uint8_t r1[32] = {}, r2[32] = {}, zero[32] = {};
  ASSERT_TRUE(OsRandom(r1, sizeof r1).ok());
  ASSERT_TRUE(OsRandom(r2, sizeof r2).ok());
  EXPECT_FALSE(ConstantTimeEqual(r1, r2, 32));
  EXPECT_FALSE(ConstantTimeEqual(r1, zero, 32));
  Wipe(r1, sizeof r1);
  EXPECT_TRUE(ConstantTimeEqual(r1, zero, 32));
}

std::vector<uint8_t> Bytes(const std::string& hex) {
  std::vector<uint8_t> b;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) b.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return b;
}

std::vector<uint8_t> Range(int from, int to) {  // from, from + 1, ..., to - 1
  std::vector<uint8_t> b;
  for (int i = from; i < to; ++i) b.push_back(uint8_t(i));
  return b;
}

std::string Hkdf(const std::vector<uint8_t>& ikm, const std::vector<uint8_t>& salt, const std::vector<uint8_t>& info,
                 size_t n) {
  std::vector<uint8_t> out(n);
  HkdfSha256(ikm.data(), ikm.size(), salt.data(), salt.size(), info.data(), info.size(), out.data(), n);
  return HexOf(out.data(), n);
}

TEST(HkdfSha256, Rfc5869TestCases) {
  // A.1 Test Case 1
  EXPECT_EQ(Hkdf(std::vector<uint8_t>(22, 0x0b), Range(0x00, 0x0d), Range(0xf0, 0xfa), 42),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
  // A.2 Test Case 2: longer inputs and outputs
  EXPECT_EQ(Hkdf(Range(0x00, 0x50), Range(0x60, 0xb0), Range(0xb0, 0x100), 82),
            "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09"
            "da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87");
  // A.3 Test Case 3: no salt, no info
  EXPECT_EQ(Hkdf(std::vector<uint8_t>(22, 0x0b), {}, {}, 42),
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8");
}

// One AES-256 test case of the GCM specification (McGrew and Viega, "The Galois/Counter Mode
// of Operation", appendix B).
struct GcmCase {
  int number;
  std::string key, nonce, plain, aad, cipher, tag;
};
std::vector<GcmCase> GcmCases() {
  const std::string k15 = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308";
  const std::string p64 =
      "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525"
      "b16aedf5aa0de657ba637b391aafd255";
  const std::string c64 =
      "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838"
      "c5f61e6393ba7a0abcc9f662898015ad";
  return {
      {13, std::string(64, '0'), std::string(24, '0'), "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
      {14, std::string(64, '0'), std::string(24, '0'), std::string(32, '0'), "", "cea7403d4d606b6e074ec5d3baf39d18",
       "d0d1c8a799996bf0265b98b5d48ab919"},
      {15, k15, "cafebabefacedbaddecaf888", p64, "", c64, "b094dac5d93471bdec1a502270e3cc6c"},
      {16, k15, "cafebabefacedbaddecaf888", p64.substr(0, 120), "feedfacedeadbeeffeedfacedeadbeefabaddad2",
       c64.substr(0, 120), "76fc6ece0f4e1768cddf8853bb2d551b"},
  };
}

TEST(Aes256Gcm, SpecificationTestCases13To16) {
  for (const GcmCase& c : GcmCases()) {
    const auto key = Bytes(c.key), nonce = Bytes(c.nonce), plain = Bytes(c.plain), aad = Bytes(c.aad);
    // Sealed whole, and sealed in pieces of 1, 7 and 16 bytes (the cipher keeps its place).
    for (size_t step : {plain.size(), size_t(1), size_t(7), size_t(16)}) {
      if (step == 0) step = 1;
      Aes256Gcm seal(Aes256Gcm::Use::kSeal);
      seal.SetKey(key.data());
      seal.Start(nonce.data(), aad.data(), aad.size());
      std::vector<uint8_t> out(plain.size());
      for (size_t at = 0; at < plain.size(); at += step)
        seal.Update(plain.data() + at, std::min(step, plain.size() - at), out.data() + at);
      uint8_t tag[16];
      seal.SealFinish(tag);
      EXPECT_EQ(HexOf(out.data(), out.size()), c.cipher) << "case " << c.number << " step " << step;
      EXPECT_EQ(HexOf(tag, 16), c.tag) << "case " << c.number << " step " << step;
    }
    // Opened: the plaintext, and only with every byte as sealed.
    const auto cipher = Bytes(c.cipher), tag = Bytes(c.tag);
    auto open = [&](const std::vector<uint8_t>& n, const std::vector<uint8_t>& a, const std::vector<uint8_t>& ct,
                    const std::vector<uint8_t>& t, std::vector<uint8_t>* out) {
      Aes256Gcm o(Aes256Gcm::Use::kOpen);
      o.SetKey(key.data());
      o.Start(n.data(), a.data(), a.size());
      out->assign(ct.size(), 0);
      o.Update(ct.data(), ct.size(), out->data());
      return o.OpenFinish(t.data());
    };
    std::vector<uint8_t> got;
    ASSERT_TRUE(open(nonce, aad, cipher, tag, &got)) << "case " << c.number;
    EXPECT_EQ(HexOf(got.data(), got.size()), c.plain) << "case " << c.number;
    auto flipped = [](std::vector<uint8_t> v, size_t i) {
      v[i] ^= 0x01;
      return v;
    };
    for (size_t i = 0; i < cipher.size(); i += 13) EXPECT_FALSE(open(nonce, aad, flipped(cipher, i), tag, &got));
    for (size_t i = 0; i < tag.size(); ++i) EXPECT_FALSE(open(nonce, aad, cipher, flipped(tag, i), &got));
    EXPECT_FALSE(open(flipped(nonce, 11), aad, cipher, tag, &got)) << "case " << c.number;
    if (!aad.empty()) {
      EXPECT_FALSE(open(nonce, flipped(aad, 0), cipher, tag, &got));
    }
  }
}

TEST(Aes256Gcm, OneContextManyMessagesAndKeys) {
  // The context is reused across messages and keys (as a connection reuses it): each message
  // seals as a fresh context would.
  Aes256Gcm seal(Aes256Gcm::Use::kSeal);
  for (int round = 0; round < 3; ++round)
    for (const GcmCase& c : GcmCases()) {
      const auto key = Bytes(c.key), nonce = Bytes(c.nonce), plain = Bytes(c.plain), aad = Bytes(c.aad);
      seal.SetKey(key.data());
      seal.Start(nonce.data(), aad.data(), aad.size());
      std::vector<uint8_t> out(plain);
      seal.Update(out.data(), out.size(), out.data());  // in place
      uint8_t tag[16];
      seal.SealFinish(tag);
      EXPECT_EQ(HexOf(out.data(), out.size()) + HexOf(tag, 16), c.cipher + c.tag) << c.number;
    }
}

}  // namespace
}  // namespace equarx::transport
