// equarx socket transport — the record layer of the encrypted data path (see encrypted_streams.h).
#include "transport/socket/encrypted_streams.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace equarx::transport {
namespace {

using Io = ByteStreams::Io;
using Piece = ByteStreams::Piece;

// A piece that does not fit in a record is split only if at least this much of it goes in, so
// that a record never ends at the first byte of a frame (its 16-byte header is never split).
constexpr size_t kMinCut = 64;
constexpr size_t kRecordWireMax = kMaxRecordBytes + kRecordOverhead;
constexpr size_t kInBytes = 4 * kRecordWireMax;  // ciphertext read from the stream, not yet opened

std::string Num(uint64_t v) { return std::to_string(v); }

}  // namespace

RecordCipher::RecordCipher(Aes256Gcm::Use use, const uint8_t key[Aes256Gcm::kKeyBytes], const RecordLimits& limits)
    : gcm_(use), limits_(limits) {
  std::memcpy(key_, key, sizeof key_);
  gcm_.SetKey(key_);
}

void RecordCipher::Start(const uint8_t header[kRecordHeaderBytes]) {
  uint8_t nonce[Aes256Gcm::kNonceBytes] = {};
  for (int i = 0; i < 8; ++i) nonce[4 + i] = uint8_t(seq_ >> (56 - 8 * i));
  gcm_.Start(nonce, header, kRecordHeaderBytes);
}

void RecordCipher::Next() {
  ++seq_;
  if (limits_.records_per_key == 0 || seq_ % limits_.records_per_key != 0) return;
  static const char kLabel[] = "equarx socket v1 key update";
  uint8_t next[Aes256Gcm::kKeyBytes];
  HkdfSha256(key_, sizeof key_, nullptr, 0, kLabel, sizeof kLabel - 1, next, sizeof next);
  std::memcpy(key_, next, sizeof key_);
  Wipe(next, sizeof next);
  gcm_.SetKey(key_);
}

void RecordCipher::StartSeal(uint32_t n, uint8_t header[kRecordHeaderBytes]) {
  handshake::PutU32(header, n);
  Start(header);
}

void RecordCipher::FinishSeal(uint8_t tag[Aes256Gcm::kTagBytes]) {
  gcm_.SealFinish(tag);
  Next();
}

size_t RecordCipher::SealRecord(const void* in, uint32_t n, uint8_t* out) {
  StartSeal(n, out);
  Seal(in, n, out + kRecordHeaderBytes);
  FinishSeal(out + kRecordHeaderBytes + n);
  return n + kRecordOverhead;
}

bool RecordCipher::Open(const uint8_t* record, uint32_t n, uint8_t* out) {
  Start(record);
  gcm_.Update(record + kRecordHeaderBytes, n, out);
  if (!gcm_.OpenFinish(record + kRecordHeaderBytes + n)) {
    Wipe(out, n);
    return false;
  }
  Next();
  return true;
}

namespace {

class EncryptedStreams final : public ByteStreams {
 public:
  EncryptedStreams(std::unique_ptr<ByteStreams> inner, const std::vector<handshake::DataKeys>& keys,
                   const RecordLimits& limits)
      : inner_(std::move(inner)), links_(size_t(inner_->size())) {
    for (size_t p = 0; p < links_.size() && p < keys.size(); ++p) links_[p] = std::make_unique<Link>(keys[p], limits);
  }
  int size() const override { return inner_->size(); }
  const char* name() const override { return inner_->name(); }
  size_t ReadAhead(int) const override { return 0; }  // opened records are the read-ahead
  void Wait(const std::vector<Interest>& interest, int timeout_ms, std::vector<Ready>* ready) override {
    inner_->Wait(interest, timeout_ms, ready);
  }
  void Close(int peer) override {
    inner_->Close(peer);
    links_[size_t(peer)].reset();  // its keys are wiped
  }

  // Reports as taken what it has sealed, less the last byte while any of the sealed records
  // is not yet in the kernel (ByteStreams::Write): that byte's frame stays queued, so the data
  // loop keeps calling until the records are out, and the stream never carries a record whose
  // frames the data loop could still drop.
  Io Write(int peer, const Piece* pieces, int n, size_t* written, std::string* why) override {
    Link& l = *links_[size_t(peer)];
    size_t taken = 0;
    if (l.out_pos < l.out_len) {
      if (Flush(peer, l, why) == Io::kClosed) return Io::kClosed;
      if (l.out_pos < l.out_len) return Io::kWouldBlock;
      taken = l.held;  // the byte kept back: the pieces begin with it
      l.held = 0;
    }
    size_t sealed = 0;
    if (!SealPieces(peer, l, pieces, n, taken, &sealed, why)) return Io::kClosed;
    if (sealed) {
      if (Flush(peer, l, why) == Io::kClosed) return Io::kClosed;
      l.held = l.out_pos < l.out_len ? 1 : 0;
      taken += sealed - l.held;
    }
    *written = taken;
    return taken ? Io::kOk : Io::kWouldBlock;
  }

  Io Read(int peer, void* dst, size_t want, size_t* got, std::string* why) override {
    Link& l = *links_[size_t(peer)];
    if (l.plain_pos == l.plain_len) {
      const Io io = OpenNext(peer, l, static_cast<uint8_t*>(dst), want, got, why);
      if (io != Io::kOk || *got) return io;  // failed, nothing yet, or opened straight into dst
    }
    const size_t n = std::min(want, l.plain_len - l.plain_pos);
    std::memcpy(dst, l.plain.data() + l.plain_pos, n);
    l.plain_pos += n;
    *got = n;
    return Io::kOk;
  }

  bool Buffered(int peer) const override {
    const Link* l = links_[size_t(peer)].get();
    if (!l) return false;
    if (l->plain_pos < l->plain_len) return true;
    const size_t have = l->in_len - l->in_pos;
    if (have < kRecordHeaderBytes) return false;
    const uint32_t n = handshake::GetU32(l->in.data() + l->in_pos);
    return n == 0 || n > kMaxRecordBytes || have >= n + kRecordOverhead;  // a bad header is news too
  }

 private:
  struct Link {
    Link(const handshake::DataKeys& k, const RecordLimits& limits)
        : seal(Aes256Gcm::Use::kSeal, k.send, limits), open(Aes256Gcm::Use::kOpen, k.recv, limits) {}
    RecordCipher seal, open;
    std::vector<uint8_t> out;  // sealed records; out[out_pos, out_len) not yet in the kernel
    size_t out_pos = 0, out_len = 0;
    size_t held = 0;           // plaintext bytes sealed but not yet reported taken (0 or 1)
    std::vector<uint8_t> in;   // records read; in[in_pos, in_len) not yet opened
    size_t in_pos = 0, in_len = 0;
    std::vector<uint8_t> plain;  // an opened record; plain[plain_pos, plain_len) not yet read
    size_t plain_pos = 0, plain_len = 0;
  };

  // Hands the sealed records to the stream until it takes no more: kOk, kWouldBlock, kClosed.
  Io Flush(int peer, Link& l, std::string* why) {
    while (l.out_pos < l.out_len) {
      const Piece p{l.out.data() + l.out_pos, l.out_len - l.out_pos};
      size_t w = 0;
      const Io io = inner_->Write(peer, &p, 1, &w, why);
      if (io != Io::kOk) return io;
      l.out_pos += w;
    }
    return Io::kOk;
  }

  // Seals up to kSealBatch records of the pieces' bytes after the first `skip` into l.out
  // (empty now); *sealed: the plaintext bytes they hold. False (with why) when this direction
  // has no sequence number left.
  bool SealPieces(int peer, Link& l, const Piece* pieces, int n, size_t skip, size_t* sealed, std::string* why) {
    if (l.out.empty()) l.out.resize(kSealBatch * kRecordWireMax);
    l.out_pos = l.out_len = 0;
    int i = 0;
    size_t off = skip;
    while (i < n && off >= pieces[i].bytes) off -= pieces[i++].bytes;
    for (size_t r = 0; r < kSealBatch && i < n; ++r) {
      // Whole pieces while they fit; then as much of the next as fits, if that is kMinCut or more.
      size_t len = 0;
      size_t o = off;
      for (int j = i; j < n && len < kMaxRecordBytes; ++j, o = 0) {
        const size_t avail = pieces[j].bytes - o, room = kMaxRecordBytes - len;
        if (avail > room) {
          if (room >= kMinCut || len == 0) len += room;
          break;
        }
        len += avail;
      }
      if (len == 0) break;
      if (l.seal.Exhausted()) {
        if (*sealed) break;  // send these; the next call fails
        *why = "this rank has sealed the most records one connection may (" + Num(l.seal.records()) +
               ") for rank " + std::to_string(peer) + "; no nonce is left";
        return false;
      }
      uint8_t* rec = l.out.data() + l.out_len;
      l.seal.StartSeal(uint32_t(len), rec);
      uint8_t* dst = rec + kRecordHeaderBytes;
      for (size_t left = len; left > 0;) {
        const size_t take = std::min(left, pieces[i].bytes - off);
        l.seal.Seal(pieces[i].data + off, take, dst);
        dst += take;
        left -= take;
        off += take;
        if (off == pieces[i].bytes) {
          ++i;
          off = 0;
        }
      }
      l.seal.FinishSeal(dst);
      l.out_len += len + kRecordOverhead;
      *sealed += len;
    }
    return true;
  }

  // Opens the next record, reading the stream as needed: straight into `dst` when it wants the
  // whole record (*got = its length), else into l.plain (*got = 0).
  Io OpenNext(int peer, Link& l, uint8_t* dst, size_t want, size_t* got, std::string* why) {
    *got = 0;
    if (l.in.empty()) {
      l.in.resize(kInBytes);
      l.plain.resize(kMaxRecordBytes);
    }
    auto record = [&] { return "encrypted record " + Num(l.open.records()) + " from rank " + std::to_string(peer); };
    for (;;) {
      const size_t have = l.in_len - l.in_pos;
      if (have >= kRecordHeaderBytes) {
        const uint8_t* rec = l.in.data() + l.in_pos;
        const uint32_t n = handshake::GetU32(rec);
        if (n == 0 || n > kMaxRecordBytes) {
          *why = "protocol error: " + record() + " announced " + Num(n) + " bytes (1 to " + Num(kMaxRecordBytes) +
                 " allowed)";
          return Io::kClosed;
        }
        if (have >= n + kRecordOverhead) {
          if (l.open.Exhausted()) {
            *why = "protocol error: rank " + std::to_string(peer) + " sent more records than one connection may (" +
                   Num(l.open.records()) + ")";
            return Io::kClosed;
          }
          uint8_t* to = want >= n ? dst : l.plain.data();
          if (!l.open.Open(rec, n, to)) {
            *why = "authentication failed: " + record() +
                   " did not verify (altered, replayed, reordered, or sealed with another key)";
            return Io::kClosed;
          }
          l.in_pos += n + kRecordOverhead;
          if (to == dst) {
            *got = n;
          } else {
            l.plain_pos = 0;
            l.plain_len = n;
          }
          return Io::kOk;
        }
      }
      // More bytes needed: room for a whole record from in_pos, then read.
      if (have == 0) {
        l.in_pos = l.in_len = 0;
      } else if (l.in.size() - l.in_pos < kRecordWireMax) {
        std::memmove(l.in.data(), l.in.data() + l.in_pos, have);
        l.in_pos = 0;
        l.in_len = have;
      }
      size_t r = 0;
      const Io io = inner_->Read(peer, l.in.data() + l.in_len, l.in.size() - l.in_len, &r, why);
      if (io == Io::kClosed && have > 0)
        *why += " in the middle of " + record() + " (" + Num(have) + " of its bytes arrived): it was cut short";
      if (io != Io::kOk) return io;
      l.in_len += r;
    }
  }

  std::unique_ptr<ByteStreams> inner_;
  std::vector<std::unique_ptr<Link>> links_;  // null once closed
};

}  // namespace

std::unique_ptr<ByteStreams> MakeEncryptedStreams(std::unique_ptr<ByteStreams> inner,
                                                  const std::vector<handshake::DataKeys>& keys,
                                                  const RecordLimits& limits) {
  return std::make_unique<EncryptedStreams>(std::move(inner), keys, limits);
}

}  // namespace equarx::transport
