// Fuzz harness: the socket transport's data loop (src/transport/stream/stream_transport.cc)
// reading an arbitrary byte stream from an authenticated peer: frame headers {u64 tag,
// u64 length} and payloads, cut and sized however the fuzzer likes, against receives posted
// before and while the stream is read, with per-message and held-bytes limits the input picks.
//
// Input: [max_message log2 u8][max_unexpected log2 u8][receives u8] then per receive
// [tag u8][bytes u16][wait-now u8], then the stream (at most 32 KiB). The peer is one end of
// a socketpair that writes the stream and then shuts down. Invariants beyond "no crash, no
// sanitizer report": after the peer's end of stream every receive completes (ok or an error)
// well before its deadline, never a timeout; a failed one says why.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "fuzz_input.h"
#include "transport/socket/socket_transport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace equarx;
  using namespace equarx::transport;
  fuzz::Input in(data, size);
  SocketOptions o;
  o.max_message_bytes = size_t(1) << (in.Take<uint8_t>() % 24);
  o.max_unexpected_bytes = size_t(1) << (in.Take<uint8_t>() % 20);
  struct Recv {
    uint64_t tag;
    std::vector<uint8_t> buf;
    bool wait_now;
    Request req;
    bool done = false;
  };
  std::vector<std::unique_ptr<Recv>> recvs(in.Take<uint8_t>() % 9);
  for (auto& r : recvs) {
    r = std::make_unique<Recv>();
    r->tag = in.Take<uint8_t>() % 4;
    r->buf.resize(in.Take<uint16_t>() % 4097);
    r->wait_now = in.Take<uint8_t>() & 1;
  }
  const size_t stream = std::min<size_t>(in.remaining(), 32 << 10);
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0) fuzz::Fail("socketpair");
  fcntl(sp[0], F_SETFL, fcntl(sp[0], F_GETFL) | O_NONBLOCK);
  std::unique_ptr<Transport> t = MakeSocketTransport(0, Mesh{{-1, sp[0]}, {}}, o);  // takes sp[0]
  for (size_t off = 0; off < stream;) {
    const ssize_t w = write(sp[1], in.rest() + off, stream - off);
    if (w <= 0) fuzz::Fail("write to the socketpair");
    off += size_t(w);
  }
  shutdown(sp[1], SHUT_WR);
  auto check = [](const Status& st) {
    if (st.code() == StatusCode::kTimeout) fuzz::Fail("a receive timed out after the peer's end of stream");
    if (!st.ok() && st.message().empty()) fuzz::Fail("a failed receive has no message");
  };
  const auto deadline = [] { return Clock::now() + std::chrono::seconds(10); };
  for (auto& r : recvs) {
    if (!t->Irecv(1, r->tag, r->buf.data(), r->buf.size(), &r->req).ok()) {
      r->done = true;
      continue;
    }
    if (r->wait_now) {
      check(t->Wait(&r->req, deadline()));
      r->done = true;
    }
  }
  for (auto& r : recvs)
    if (!r->done) check(t->Wait(&r->req, deadline()));
  t.reset();
  close(sp[1]);
  return 0;
}
