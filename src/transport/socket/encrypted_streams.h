// equarx socket transport — the encrypted data path (SocketOptions::encrypt, EQUARX_ENCRYPT=1):
// a record layer between the stream transport's data loop (src/transport/stream/) and the TCP
// connections. Everything the data loop writes to a peer, frame headers and payloads alike, is
// cut into records and sealed with AES-256-GCM (OpenSSL, crypto.h); the receiving end opens
// each record whole, and no byte of it counts as received (no request completes with it, no
// frame header is read from it) unless its tag verifies.
//
// A record on the wire:   u32 n (little-endian, 1..kMaxRecordBytes) | ciphertext (n bytes) | tag (16 bytes)
//   key      this connection's key for this direction (socket_handshake.h derives both from the
//            communicator's secret and the connection's handshake), replaced every
//            records_per_key records by HKDF-SHA-256(key, "equarx socket v1 key update"), at
//            the same record on both ends, so that no key seals more than 2^24 records;
//   nonce    4 zero bytes || the record's sequence number (u64, big-endian), counted from 0 in
//            each direction, never sent: a replayed, reordered, dropped or injected record meets
//            another nonce than it was sealed with and fails its tag;
//   aad      the record's 4-byte length, so that it cannot be altered either.
// A direction that has sealed max_records records fails the connection (kRemoteError on that
// peer's requests) rather than reuse a nonce. A record that fails its tag, announces a length
// outside 1..kMaxRecordBytes, or is cut off by the end of the stream fails the connection in the
// same way, naming the peer and the record.
//
// Sealing gathers the data loop's pieces into records of up to kMaxRecordBytes (up to
// kSealBatch of them per system call) in a buffer of the connection's; opening reads records
// into another and decrypts straight into the caller's buffer when a whole record is wanted
// there (wiping it if the tag fails), otherwise into a third. Those buffers are made on a
// connection's first use and reused: the data path allocates nothing per message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/socket/crypto.h"
#include "transport/socket/socket_handshake.h"
#include "transport/stream/stream_transport.h"

namespace equarx::transport {

constexpr size_t kRecordHeaderBytes = 4;
constexpr size_t kMaxRecordBytes = size_t(32) << 10;  // plaintext bytes of one record
constexpr size_t kRecordOverhead = kRecordHeaderBytes + Aes256Gcm::kTagBytes;
constexpr size_t kSealBatch = 4;  // records sealed before they are written in one system call

/// When keys change and when a direction stops (tests lower them).
struct RecordLimits {
  uint64_t records_per_key = uint64_t(1) << 24;
  uint64_t max_records = uint64_t(1) << 48;
};

/// One direction of an encrypted connection: its current key and the sequence number of its
/// next record. Sealing is Start, Update..., Finish (so that a record may be gathered from
/// pieces); opening takes a whole record.
class RecordCipher {
 public:
  RecordCipher(Aes256Gcm::Use use, const uint8_t key[Aes256Gcm::kKeyBytes], const RecordLimits& limits);
  ~RecordCipher() { Wipe(key_, sizeof key_); }
  /// Records sealed or opened so far: the sequence number of the next one.
  uint64_t records() const { return seq_; }
  /// True once max_records records have been sealed or opened: no nonce is left to use.
  bool Exhausted() const { return seq_ >= limits_.max_records; }

  /// Begins sealing a record of `n` plaintext bytes (requires !Exhausted()): writes its header.
  void StartSeal(uint32_t n, uint8_t header[kRecordHeaderBytes]);
  void Seal(const void* in, size_t n, void* out) { gcm_.Update(in, n, out); }
  void FinishSeal(uint8_t tag[Aes256Gcm::kTagBytes]);
  /// The whole record of `n` bytes at `in` into `out` (n + kRecordOverhead bytes); its size.
  size_t SealRecord(const void* in, uint32_t n, uint8_t* out);

  /// Opens the whole record at `record` (header, then ciphertext and tag of n bytes; requires
  /// !Exhausted()) into `out`: true iff it authenticates; otherwise `out` is wiped.
  bool Open(const uint8_t* record, uint32_t n, uint8_t* out);

 private:
  void Start(const uint8_t header[kRecordHeaderBytes]);
  void Next();  // the next sequence number, and the next key when due

  Aes256Gcm gcm_;
  uint8_t key_[Aes256Gcm::kKeyBytes];
  RecordLimits limits_;
  uint64_t seq_ = 0;
};

/// The streams of `inner` (the mesh's TCP connections), encrypted: keys[p] are the keys of
/// the connection to rank p (unused for this rank). Takes `inner`.
std::unique_ptr<ByteStreams> MakeEncryptedStreams(std::unique_ptr<ByteStreams> inner,
                                                  const std::vector<handshake::DataKeys>& keys,
                                                  const RecordLimits& limits);

}  // namespace equarx::transport
