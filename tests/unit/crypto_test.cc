// SHA-256 and HMAC-SHA-256 (OpenSSL's, through src/transport/socket/crypto.h) against the
// specifications' own test vectors: the FIPS 180-2
// appendix examples (one block, two blocks, one million 'a'), the empty message, the 896-bit
// FIPS 180-2 SHA-512 example message, and RFC 4231 test cases 1-7 for HMAC-SHA-256. Also:
// hashing in pieces equals hashing at once, and the constant-time comparison. Every expected
// value was also cross-checked against an independent implementation (Python's hashlib/hmac).
#include "transport/socket/crypto.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace equarx::transport {
namespace {

std::string Hex(const Digest& d, size_t n = 32) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += k[d[i] >> 4];
    s += k[d[i] & 15];
  }
  return s;
}

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

}  // namespace
}  // namespace equarx::transport
