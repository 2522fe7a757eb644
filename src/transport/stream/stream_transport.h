// equarx stream transport: the Transport of a group whose ranks are joined pairwise by byte
// streams, whatever carries the bytes.
//
// Two backends provide the streams: TCP connections (src/transport/socket/, the data path
// between hosts) and rings in shared memory (src/transport/shm/, ranks of one host). The data
// loop above them is one piece of code (stream_transport.cc), so both frame, match, cancel and
// fail in exactly the same way:
//   - A message is a 16-byte header {u64 tag, u64 length} and its payload.
//   - Receives are matched by (source, tag) in posting order, as in MPI: a header that meets a
//     posted receive streams straight into the caller's buffer; otherwise the message is read
//     into a buffer of its own (at most max_unexpected_bytes per peer; beyond that reading
//     stops and the stream's flow control holds the sender) until a receive claims it.
//   - A send cancelled after part of it entered the stream is finished from a private copy,
//     so the stream stays in step.
//   - A stream that fails or ends fails every request of that one peer with kRemoteError,
//     naming the peer and the reason the backend gives.
//   - Progress happens inside Isend, Wait and Test on the calling thread only; a wait polls
//     for up to the transport's spin (Transport::SetSpin), then sleeps in the backend (poll()
//     on sockets, a futex on shared memory) until the deadline.
//   - Small frames move in few system calls: a Write gathers every frame queued for a peer (up
//     to ByteStreams::kMaxPieces pieces), and a stream with read-ahead (sockets) is read into
//     a buffer of the data loop's that holds the next frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace equarx::transport {

/// The byte streams between this rank and each peer (one each way). Non-blocking; used by one
/// thread at a time (the transport's caller).
class ByteStreams {
 public:
  enum class Io { kOk, kWouldBlock, kClosed };
  struct Piece {
    const uint8_t* data;
    size_t bytes;
  };
  /// What the data loop wants of one peer's streams: to write (it has bytes queued) and/or to
  /// read (false: only the peer's hang-up matters now).
  struct Interest {
    int peer;
    bool write;
    bool read;
  };
  /// A peer whose streams may make progress now.
  struct Ready {
    int peer;
    bool writable = false;
    bool readable = false;
    bool hangup = false;  ///< the stream failed or the peer is gone (then `why` says how)
    std::string why;
  };

  virtual ~ByteStreams() = default;
  virtual int size() const = 0;
  /// For messages: "socket", "shared-memory".
  virtual const char* name() const = 0;
  /// Writes a prefix of the pieces without blocking: kOk with *written (> 0) bytes taken,
  /// kWouldBlock when none fit, or kClosed (the stream failed; *why says how). Every piece
  /// lies within one frame, and a frame's first piece is its whole 16-byte header. A stream
  /// may count as taken bytes that it has committed to carry but still holds (a record
  /// layer's sealed records) only while it keeps back the last of them: the frame of that byte
  /// then stays queued, and the data loop calls Write again, that byte first, until it is out.
  virtual Io Write(int peer, const Piece* pieces, int n, size_t* written, std::string* why) = 0;
  /// Reads up to `want` (> 0) bytes without blocking: kOk with *got > 0, kWouldBlock, or
  /// kClosed (the peer ended the stream or is gone; *why says how).
  virtual Io Read(int peer, void* dst, size_t want, size_t* got, std::string* why) = 0;
  /// Waits up to `timeout_ms` (0: just look) until one of the peers in `interest` can make
  /// progress, and lists those in `ready`. With no interest at all it sleeps the timeout.
  virtual void Wait(const std::vector<Interest>& interest, int timeout_ms, std::vector<Ready>* ready) = 0;
  /// Ends both streams to `peer` (the peer then sees kClosed once it has read what was sent).
  virtual void Close(int peer) = 0;
  /// How many bytes the data loop should ask `peer`'s stream for at once when it needs fewer
  /// (a frame header, a small message), keeping the rest for the next frames: one system call
  /// then reads several small frames. 0: read exactly what is needed (a ring in memory).
  virtual size_t ReadAhead(int peer) const { (void)peer; return 0; }
  /// True when Read would return bytes for `peer` that the stream already holds (a record
  /// layer's opened records): no readiness of the connection announces them.
  virtual bool Buffered(int peer) const { (void)peer; return false; }
  /// The most pieces one Write takes (the data loop gathers several queued frames into one).
  static constexpr int kMaxPieces = 16;
};

struct StreamLimits {
  /// The largest message: Isend refuses a longer one (kUnsupported), and a frame header
  /// announcing more is a protocol error that fails that peer's stream.
  size_t max_message_bytes = (size_t(1) << 31) - 1;
  /// Per peer: bytes of messages that arrived before their receive was posted and are held in
  /// memory.
  size_t max_unexpected_bytes = size_t(16) << 20;
};

/// The transport over `streams` (rank `rank` of streams->size()). Takes the streams.
std::unique_ptr<Transport> MakeStreamTransport(int rank, std::unique_ptr<ByteStreams> streams,
                                               const StreamLimits& limits);

}  // namespace equarx::transport
