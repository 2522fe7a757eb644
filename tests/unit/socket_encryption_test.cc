// The encrypted socket data path (src/transport/socket/encrypted_streams.h), over real TCP.
//   - Wire format: the handshake's secret and MACs, the data keys, the key update and sealed
//     records equal values computed independently from their documented formulas (Python's
//     hashlib, hmac and cryptography: see each constant); the unencrypted handshake is the one
//     equarx has always had, and unencrypted ranks send their frames byte for byte.
//   - A peer that passed the handshake and knows the keys (played by the test) sends what an
//     attacker on the path could make of its records: a changed byte anywhere (length,
//     ciphertext, tag), a replayed, reordered or foreign-key record, a record cut short, a
//     length out of range. Every one fails that connection on the real rank with kRemoteError
//     naming the peer and the record, at once, and nothing of the record reaches the caller.
//   - What a rank sends is sealed frames: opened with the receive key they are the frames.
//   - Keys update every records_per_key records at both ends; a direction whose nonces run out
//     fails cleanly; ranks that disagree on encryption fail setup on every rank.
//   - The record layer under the data loop, over a scripted stream (Pipe): a send completes
//     only once its records are wholly in the stream, and opened bytes that no readiness will
//     announce are read as soon as a receive wants them.
// The data loop's contract over encrypted TCP (matching, cancels mid-send, AllReduce bits) is
// in stream_transport_test.cc (backends socket_enc and hosts_enc).
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.h"
#include "support/socket_mesh.h"
#include "transport/socket/encrypted_streams.h"
#include "transport/socket/socket_transport.h"

namespace equarx::transport {
namespace {

namespace hs = handshake;

Deadline In(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

std::string Hex(const void* p, size_t n) { return testing::HexOf(p, n); }

// A data frame as the stream transport writes it: {u64 tag, u64 length} (host order), payload.
std::vector<uint8_t> Frame(uint64_t tag, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f(16 + payload.size());
  const uint64_t h[2] = {tag, payload.size()};
  std::memcpy(f.data(), h, 16);
  if (!payload.empty()) std::memcpy(f.data() + 16, payload.data(), payload.size());
  return f;
}

std::vector<uint8_t> Pattern(size_t n, int seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 31 + size_t(seed) * 7 + (i >> 8));
  return v;
}

bool SendAll(int fd, const std::vector<uint8_t>& b) {
  size_t off = 0;
  while (off < b.size()) {
    const ssize_t w = send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
    if (w <= 0) return false;
    off += size_t(w);
  }
  return true;
}

bool RecvAll(int fd, uint8_t* p, size_t n) {
  for (size_t off = 0; off < n;) {
    const ssize_t r = recv(fd, p + off, n - off, 0);
    if (r <= 0) return false;
    off += size_t(r);
  }
  return true;
}

// Rank 0's stream to rank 1, scripted: Write takes at most `room` bytes in all (then would
// block) into `wire`; Read gives `incoming`. Wait reports what could move now.
class Pipe final : public ByteStreams {
 public:
  size_t room = SIZE_MAX;
  std::vector<uint8_t> wire, incoming;
  int size() const override { return 2; }
  const char* name() const override { return "test pipe"; }
  Io Write(int, const Piece* pieces, int n, size_t* written, std::string*) override {
    size_t took = 0;
    for (int i = 0; i < n && took < room; ++i) {
      const size_t k = std::min(pieces[i].bytes, room - took);
      wire.insert(wire.end(), pieces[i].data, pieces[i].data + k);
      took += k;
    }
    if (room != SIZE_MAX) room -= took;
    *written = took;
    return took ? Io::kOk : Io::kWouldBlock;
  }
  Io Read(int, void* dst, size_t want, size_t* got, std::string*) override {
    *got = std::min(want, incoming.size());
    if (*got == 0) return Io::kWouldBlock;
    std::memcpy(dst, incoming.data(), *got);
    incoming.erase(incoming.begin(), incoming.begin() + ptrdiff_t(*got));
    return Io::kOk;
  }
  void Wait(const std::vector<Interest>& interest, int, std::vector<Ready>* ready) override {
    for (const Interest& in : interest) {
      Ready r;
      r.peer = in.peer;
      r.writable = in.write && room > 0;
      r.readable = in.read && !incoming.empty();
      if (r.writable || r.readable) ready->push_back(r);
    }
  }
  void Close(int) override {}
};

// Rank 0 of two over an encrypted Pipe; `keys` are rank 0's keys for rank 1.
std::unique_ptr<Transport> OverPipe(Pipe** pipe, const hs::DataKeys& keys, size_t max_unexpected) {
  auto p = std::make_unique<Pipe>();
  *pipe = p.get();
  StreamLimits limits;
  limits.max_unexpected_bytes = max_unexpected;
  return MakeStreamTransport(0, MakeEncryptedStreams(std::move(p), {hs::DataKeys{}, keys}, RecordLimits{}), limits);
}

TEST(RecordLayer, ASendCompletesOnlyOnceItsRecordsAreWhollyInTheStream) {
  hs::DataKeys keys;
  ASSERT_TRUE(OsRandom(keys.send, 32).ok());
  for (const size_t room : {size_t(0), size_t(1000), size_t(50055)}) {  // 50055: all but the last byte
    SCOPED_TRACE("room " + std::to_string(room));
    Pipe* pipe = nullptr;
    auto t = OverPipe(&pipe, keys, 1 << 20);
    pipe->room = room;
    const auto msg = Pattern(50000, int(room % 251));  // one frame: two records, 50056 bytes
    Request s;
    Status st;
    ASSERT_TRUE(t->Isend(1, 7, msg.data(), msg.size(), &s).ok());
    EXPECT_FALSE(t->Test(&s, &st)) << "complete while some of its records are not in the stream";
    pipe->room = SIZE_MAX;
    ASSERT_TRUE(t->Wait(&s, In(1000)).ok());
    ASSERT_EQ(pipe->wire.size(), 50016 + 2 * kRecordOverhead);
    RecordCipher open(Aes256Gcm::Use::kOpen, keys.send, RecordLimits{});
    std::vector<uint8_t> plain(50016);
    const uint8_t* second = pipe->wire.data() + kMaxRecordBytes + kRecordOverhead;
    ASSERT_TRUE(open.Open(pipe->wire.data(), uint32_t(kMaxRecordBytes), plain.data()));
    ASSERT_TRUE(open.Open(second, uint32_t(50016 - kMaxRecordBytes), plain.data() + kMaxRecordBytes));
    EXPECT_EQ(plain, Frame(7, msg));
  }
}

TEST(RecordLayer, OpenedBytesThatNoReadinessAnnouncesAreReadWhenAReceiveWantsThem) {
  // One record holds two frames: 100 bytes for tag 1 (more than the 10-byte budget for
  // unclaimed messages, so reading stops at its header) and 4 for tag 2. Once tag 1's receive
  // is posted, the rest is read from the record layer, though the stream has nothing more.
  hs::DataKeys keys;
  ASSERT_TRUE(OsRandom(keys.recv, 32).ok());
  Pipe* pipe = nullptr;
  auto t = OverPipe(&pipe, keys, 10);
  std::vector<uint8_t> both = Frame(1, Pattern(100, 1));
  const auto second = Frame(2, Pattern(4, 2));
  both.insert(both.end(), second.begin(), second.end());
  RecordCipher seal(Aes256Gcm::Use::kSeal, keys.recv, RecordLimits{});
  pipe->incoming.resize(both.size() + kRecordOverhead);
  seal.SealRecord(both.data(), uint32_t(both.size()), pipe->incoming.data());
  std::vector<uint8_t> a(100), b(4);
  Request r1, r2;
  ASSERT_TRUE(t->Irecv(1, 2, b.data(), b.size(), &r2).ok());
  EXPECT_EQ(t->Wait(&r2, In(100)).code(), StatusCode::kTimeout);  // behind tag 1's header
  EXPECT_TRUE(pipe->incoming.empty());
  ASSERT_TRUE(t->Irecv(1, 1, a.data(), a.size(), &r1).ok());
  ASSERT_TRUE(t->Wait(&r1, In(1000)).ok());
  ASSERT_TRUE(t->Wait(&r2, In(1000)).ok());
  EXPECT_EQ(a, Pattern(100, 1));
  EXPECT_EQ(b, Pattern(4, 2));
}

TEST(EncryptionWireFormat, SecretMacsKeysAndRecordsMatchTheirSpecification) {
  uint8_t shares[64];
  for (int i = 0; i < 64; ++i) shares[i] = uint8_t(i);
  hs::Secret plain, enc;
  hs::DeriveSecret(shares, 2, false, &plain);
  hs::DeriveSecret(shares, 2, true, &enc);
  // SHA-256("equarx socket secret v1" [" encrypted"] || u32 2 || shares)
  EXPECT_EQ(Hex(plain.bytes, 32), "1d26d16e6b8282e27c35c8650adf39103799532971f366753d8e93090f887e61");
  EXPECT_EQ(Hex(enc.bytes, 32), "f91efdec09d49666e7ee71a59906f36de1444d67f71d4097fa76aa9cf9dc92d9");
  hs::Hello h;
  h.size = 2;
  h.from = 1;
  h.to = 0;
  uint8_t nonce_a[16];
  for (int i = 0; i < 16; ++i) {
    h.nonce_c[i] = uint8_t(0x10 + i);
    nonce_a[i] = uint8_t(0x20 + i);
  }
  // HMAC-SHA-256(K, "equarx socket v1 acceptor|connector" || u32 2, 1, 0 || nonce_c || nonce_a)
  EXPECT_EQ(Hex(hs::Mac(plain, hs::Role::kAcceptor, h, nonce_a).data(), 32),
            "376439746445af74782ff1edcc99611afd3c3257fd61de5fa5ad7d00373774fb");
  EXPECT_EQ(Hex(hs::Mac(plain, hs::Role::kConnector, h, nonce_a).data(), 32),
            "dbf3ba4977eeb5377fcdd875e10d2a3d3d5c2454768b2219a317bec764996559");
  // HKDF-SHA-256(K, nonce_c || nonce_a, "equarx socket v1 data keys" || u32 2, 1, 0), 64 bytes
  const std::string c2a = "25e2e78172e83d70242ad46f134c4e4020e1898fa1b9302c71506739db54e2ea";
  const std::string a2c = "d053e2e7925551c7ff136fcb7d194fcf4fa2bebd308d6ceb73d9f1189fa2a83d";
  hs::DataKeys connector, acceptor;
  hs::DeriveDataKeys(enc, hs::Role::kConnector, h, nonce_a, &connector);
  hs::DeriveDataKeys(enc, hs::Role::kAcceptor, h, nonce_a, &acceptor);
  EXPECT_EQ(Hex(connector.send, 32), c2a);
  EXPECT_EQ(Hex(connector.recv, 32), a2c);
  EXPECT_EQ(Hex(acceptor.send, 32), a2c);
  EXPECT_EQ(Hex(acceptor.recv, 32), c2a);
  // Records of "equarx record" (13 bytes): u32 13 || AES-256-GCM(key, 0^4 || u64 seq big-endian,
  // aad u32 13); record 1 under the updated key HKDF-SHA-256(key, "", "equarx socket v1 key update").
  RecordLimits every_record;
  every_record.records_per_key = 1;
  RecordCipher seal(Aes256Gcm::Use::kSeal, connector.send, every_record);
  const char text[] = "equarx record";
  uint8_t rec[13 + kRecordOverhead];
  ASSERT_EQ(seal.SealRecord(text, 13, rec), sizeof rec);
  EXPECT_EQ(Hex(rec, sizeof rec), "0d000000e2749f163ff9fda5f538b9e90c1581a4db7e8c1dc54615d7867f673b12");
  ASSERT_EQ(seal.SealRecord(text, 13, rec), sizeof rec);
  EXPECT_EQ(Hex(rec, sizeof rec), "0d000000b6043e7542107024c25662b4eff9292c2f07d0de4a10f5f98fac0cc345");
}

TEST(RecordCipher, OpensOnlyTheNextRecordUnderTheRightKey) {
  uint8_t key[32], other[32];
  ASSERT_TRUE(OsRandom(key, 32).ok());
  ASSERT_TRUE(OsRandom(other, 32).ok());
  RecordLimits limits;
  limits.records_per_key = 3;  // records 3.. under updated keys
  RecordCipher seal(Aes256Gcm::Use::kSeal, key, limits);
  std::vector<std::vector<uint8_t>> recs;
  for (int i = 0; i < 8; ++i) {
    const auto p = Pattern(100 + size_t(i), i);
    std::vector<uint8_t> r(p.size() + kRecordOverhead);
    seal.SealRecord(p.data(), uint32_t(p.size()), r.data());
    recs.push_back(r);
  }
  auto open = [](RecordCipher& c, const std::vector<uint8_t>& r, std::vector<uint8_t>* out) {
    out->assign(r.size() - kRecordOverhead, 0xAA);
    return c.Open(r.data(), uint32_t(out->size()), out->data());
  };
  std::vector<uint8_t> out;
  RecordCipher in_order(Aes256Gcm::Use::kOpen, key, limits);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(open(in_order, recs[size_t(i)], &out)) << i;
    EXPECT_EQ(out, Pattern(100 + size_t(i), i)) << i;
  }
  EXPECT_EQ(in_order.records(), 8u);
  RecordCipher replay(Aes256Gcm::Use::kOpen, key, limits);
  ASSERT_TRUE(open(replay, recs[0], &out));
  EXPECT_FALSE(open(replay, recs[0], &out));
  EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0)) << "a record that fails leaves zeros, not plaintext";
  RecordCipher reorder(Aes256Gcm::Use::kOpen, key, limits);
  EXPECT_FALSE(open(reorder, recs[1], &out));
  RecordCipher wrong(Aes256Gcm::Use::kOpen, other, limits);
  EXPECT_FALSE(open(wrong, recs[0], &out));
  RecordLimits no_update;
  no_update.records_per_key = 0;  // never update: record 3 was sealed under the updated key
  RecordCipher stale(Aes256Gcm::Use::kOpen, key, no_update);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(open(stale, recs[size_t(i)], &out));
  EXPECT_FALSE(open(stale, recs[3], &out));
  RecordLimits two;
  two.max_records = 2;
  RecordCipher few(Aes256Gcm::Use::kSeal, key, two);
  uint8_t r[1 + kRecordOverhead];
  few.SealRecord("x", 1, r);
  EXPECT_FALSE(few.Exhausted());
  few.SealRecord("x", 1, r);
  EXPECT_TRUE(few.Exhausted());
}

// Rank 0 real and encrypted; rank 1 the test, with the connection's keys.
class EncryptedPeer : public ::testing::Test {
 protected:
  static SocketOptions Encrypted() {
    SocketOptions o = testing::OneRealRank::Quick();
    o.encrypt = true;
    return o;
  }
  void SetUp() override {
    fd = m.ConnectAsRank1(&keys);
    ASSERT_GE(fd, 0);
    t = m.transport();
    sealer = std::make_unique<RecordCipher>(Aes256Gcm::Use::kSeal, keys.send, RecordLimits{});
  }
  void TearDown() override {
    if (fd >= 0) close(fd);
  }
  // The record that carries `bytes`, sealed as rank 1's next record (or with `with`).
  std::vector<uint8_t> Sealed(const std::vector<uint8_t>& bytes, RecordCipher* with = nullptr) {
    std::vector<uint8_t> r(bytes.size() + kRecordOverhead);
    (with ? with : sealer.get())->SealRecord(bytes.data(), uint32_t(bytes.size()), r.data());
    return r;
  }
  // Posts a receive of `n` bytes for `tag`, and expects it to fail promptly, naming rank 1
  // and `why`, with nothing written into the caller's buffer but zeros.
  void ExpectLost(uint64_t tag, size_t n, const std::string& why) {
    std::vector<uint8_t> buf(n, 0);
    Request r;
    ASSERT_TRUE(t->Irecv(1, tag, buf.data(), n, &r).ok());
    const auto t0 = Clock::now();
    const Status st = t->Wait(&r, In(5000));
    EXPECT_EQ(st.code(), StatusCode::kRemoteError) << st.ToString();
    EXPECT_NE(st.message().find("connection to rank 1 lost: " + why), std::string::npos) << st.ToString();
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 2.0);
    EXPECT_EQ(buf, std::vector<uint8_t>(n, 0));
  }
  void ExpectReceived(uint64_t tag, const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> buf(payload.size());
    Request r;
    ASSERT_TRUE(t->Irecv(1, tag, buf.data(), buf.size(), &r).ok());
    const Status st = t->Wait(&r, In(5000));
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(buf, payload);
  }

  testing::OneRealRank m{Encrypted()};
  hs::DataKeys keys;
  int fd = -1;
  Transport* t = nullptr;
  std::unique_ptr<RecordCipher> sealer;
};

TEST_F(EncryptedPeer, AnAuthenticRecordIsDeliveredAndEveryChangedByteFailsTheConnection) {
  const auto payload = Pattern(64, 1);
  const auto rec = Sealed(Frame(5, payload));
  ASSERT_TRUE(SendAll(fd, rec));
  ExpectReceived(5, payload);  // the positive control
  // Each changed byte on a fresh connection: the length (to one less), a byte of the frame
  // header's ciphertext, of the payload's, of the tag.
  for (size_t at : {size_t(0), size_t(4), size_t(4 + 16 + 7), rec.size() - 1}) {
    SCOPED_TRACE("byte " + std::to_string(at));
    testing::OneRealRank other(Encrypted());
    hs::DataKeys k;
    const int f = other.ConnectAsRank1(&k);
    ASSERT_GE(f, 0);
    RecordCipher seal(Aes256Gcm::Use::kSeal, k.send, RecordLimits{});
    std::vector<uint8_t> bad(rec.size());
    seal.SealRecord(Frame(5, payload).data(), 80, bad.data());
    if (at == 0) bad[0] = uint8_t(bad[0] - 1);
    else bad[at] ^= 0x40;
    ASSERT_TRUE(SendAll(f, bad));
    std::vector<uint8_t> buf(64, 0);
    Request r;
    ASSERT_TRUE(other.transport()->Irecv(1, 5, buf.data(), buf.size(), &r).ok());
    const Status st = other.transport()->Wait(&r, In(5000));
    EXPECT_EQ(st.code(), StatusCode::kRemoteError) << st.ToString();
    EXPECT_NE(st.message().find("connection to rank 1 lost: authentication failed: encrypted record 0 from rank 1 "
                                "did not verify"),
              std::string::npos)
        << st.ToString();
    EXPECT_EQ(buf, std::vector<uint8_t>(64, 0));
    close(f);
  }
}

TEST_F(EncryptedPeer, AReplayedRecordFails) {
  const auto rec = Sealed(Frame(5, Pattern(40, 2)));
  ASSERT_TRUE(SendAll(fd, rec));
  ExpectReceived(5, Pattern(40, 2));
  ASSERT_TRUE(SendAll(fd, rec));  // the same bytes again: record 1 expected
  ExpectLost(5, 40, "authentication failed: encrypted record 1 from rank 1 did not verify");
}

TEST_F(EncryptedPeer, AReorderedRecordFails) {
  Sealed(Frame(5, Pattern(40, 3)));  // record 0, never sent
  ASSERT_TRUE(SendAll(fd, Sealed(Frame(6, Pattern(40, 4)))));
  ExpectLost(6, 40, "authentication failed: encrypted record 0 from rank 1 did not verify");
}

TEST_F(EncryptedPeer, ARecordSealedWithAnotherKeyFails) {
  uint8_t wrong[32];
  ASSERT_TRUE(OsRandom(wrong, sizeof wrong).ok());
  RecordCipher foreign(Aes256Gcm::Use::kSeal, wrong, RecordLimits{});
  ASSERT_TRUE(SendAll(fd, Sealed(Frame(5, Pattern(40, 5)), &foreign)));
  ExpectLost(5, 40, "authentication failed: encrypted record 0 from rank 1 did not verify");
}

TEST_F(EncryptedPeer, ARecordCutShortFails) {
  auto rec = Sealed(Frame(5, Pattern(1000, 6)));
  rec.resize(rec.size() / 2);
  ASSERT_TRUE(SendAll(fd, rec));
  shutdown(fd, SHUT_WR);
  ExpectLost(5, 1000, "the peer closed the connection in the middle of encrypted record 0 from rank 1 (");
}

TEST_F(EncryptedPeer, ARecordLengthOutOfRangeIsAProtocolError) {
  const uint8_t header[4] = {0x01, 0x80, 0x00, 0x00};  // 32769: one more than a record holds
  ASSERT_TRUE(SendAll(fd, std::vector<uint8_t>(header, header + 4)));
  ExpectLost(5, 8, "protocol error: encrypted record 0 from rank 1 announced 32769 bytes (1 to 32768 allowed)");
}

TEST_F(EncryptedPeer, WhatARankSendsIsItsFramesSealed) {
  // 100 KiB and 3 bytes: four records at least; opened with rank 1's receive key they are
  // the two frames, and the payload's bytes appear nowhere on the wire.
  const auto big = Pattern(100 << 10, 7), small = Pattern(3, 8);
  Request s1, s2;
  ASSERT_TRUE(t->Isend(1, 9, big.data(), big.size(), &s1).ok());
  ASSERT_TRUE(t->Isend(1, 10, small.data(), small.size(), &s2).ok());
  std::vector<uint8_t> want = Frame(9, big), wire, plain;
  const auto tail = Frame(10, small);
  want.insert(want.end(), tail.begin(), tail.end());
  RecordCipher open(Aes256Gcm::Use::kOpen, keys.recv, RecordLimits{});
  std::thread progress([&] {
    EXPECT_TRUE(t->Wait(&s1, In(10000)).ok());
    EXPECT_TRUE(t->Wait(&s2, In(10000)).ok());
  });
  while (plain.size() < want.size()) {
    uint8_t header[4];
    ASSERT_TRUE(RecvAll(fd, header, 4));
    const uint32_t n = hs::GetU32(header);
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, kMaxRecordBytes);
    std::vector<uint8_t> rec(n + kRecordOverhead), out(n);
    std::memcpy(rec.data(), header, 4);
    ASSERT_TRUE(RecvAll(fd, rec.data() + 4, n + 16));
    ASSERT_TRUE(open.Open(rec.data(), n, out.data())) << "record " << open.records();
    plain.insert(plain.end(), out.begin(), out.end());
    wire.insert(wire.end(), rec.begin(), rec.end());
  }
  progress.join();
  EXPECT_EQ(plain, want);
  EXPECT_GE(open.records(), 4u);
  const std::vector<uint8_t> probe(big.begin() + 1000, big.begin() + 1032);
  EXPECT_EQ(std::search(wire.begin(), wire.end(), probe.begin(), probe.end()), wire.end());
}

TEST(PlainSockets, WhatARankSendsIsItsFramesByteForByte) {
  // Unencrypted: the wire carries the data loop's frames themselves, nothing added.
  testing::OneRealRank m;
  const int fd = m.ConnectAsRank1();
  ASSERT_GE(fd, 0);
  const auto payload = Pattern(1000, 9);
  Request s;
  ASSERT_TRUE(m.transport()->Isend(1, 9, payload.data(), payload.size(), &s).ok());
  ASSERT_TRUE(m.transport()->Wait(&s, In(5000)).ok());
  std::vector<uint8_t> got(16 + payload.size());
  ASSERT_TRUE(RecvAll(fd, got.data(), got.size()));
  EXPECT_EQ(got, Frame(9, payload));
  close(fd);
}

TEST(EncryptedSockets, KeysUpdateAndAConnectionWhoseNoncesRunOutFailsCleanly) {
  // Two records per key, six records per direction: six messages arrive (three keys), the
  // seventh fails on the sender, which names the reason, and the receiver sees the end.
  std::vector<std::unique_ptr<Transport>> t;
  for (const Status& s : testing::SocketMesh(2, &t, [](int, SocketOptions* o) {
         o->encrypt = true;
         o->records.records_per_key = 2;
         o->records.max_records = 6;
       }))
    ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < 6; ++i) {
    const auto a = Pattern(200, i);
    std::vector<uint8_t> b(200);
    Request s, r;
    ASSERT_TRUE(t[1]->Irecv(0, uint64_t(i), b.data(), b.size(), &r).ok());
    ASSERT_TRUE(t[0]->Isend(1, uint64_t(i), a.data(), a.size(), &s).ok());
    ASSERT_TRUE(t[0]->Wait(&s, In(5000)).ok()) << i;
    ASSERT_TRUE(t[1]->Wait(&r, In(5000)).ok()) << i;
    EXPECT_EQ(a, b) << i;
  }
  int x = 1, y = 0;
  Request s, r;
  ASSERT_TRUE(t[1]->Irecv(0, 7, &y, sizeof y, &r).ok());
  ASSERT_TRUE(t[0]->Isend(1, 7, &x, sizeof x, &s).ok());
  const Status sent = t[0]->Wait(&s, In(5000));
  EXPECT_EQ(sent.code(), StatusCode::kRemoteError) << sent.ToString();
  EXPECT_NE(sent.message().find("connection to rank 1 lost: this rank has sealed the most records one connection "
                                "may (6) for rank 1; no nonce is left"),
            std::string::npos)
      << sent.ToString();
  const Status got = t[1]->Wait(&r, In(5000));
  EXPECT_EQ(got.code(), StatusCode::kRemoteError) << got.ToString();
  EXPECT_EQ(y, 0);
}

TEST(EncryptedSockets, RanksThatDisagreeOnEncryptionFailSetupOnEveryRank) {
  for (const bool host : {false, true}) {
    SCOPED_TRACE(host ? "host data path, two hosts" : "sockets");
    std::vector<std::unique_ptr<Transport>> t;
    const auto encrypt_0_and_2 = [](int r, SocketOptions* o) { o->encrypt = r != 1; };
    const std::vector<Status> st =
        host ? testing::HostMesh(3, &t, [](int r) { return std::string(r < 2 ? "a" : "b"); }, encrypt_0_and_2)
             : testing::SocketMesh(3, &t, encrypt_0_and_2);
    for (const Status& s : st) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
      EXPECT_NE(s.message().find("the ranks disagree on encrypting the data path: rank(s) 0, 2 encrypt, rank(s) 1 "
                                 "do not (EQUARX_ENCRYPT"),
                std::string::npos)
          << s.ToString();
    }
  }
}

}  // namespace
}  // namespace equarx::transport
