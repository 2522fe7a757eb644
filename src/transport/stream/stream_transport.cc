// equarx stream transport — the data loop shared by every transport whose peers are joined by
// byte streams (TCP connections: src/transport/socket/; shared-memory rings:
// src/transport/shm/): framing, matching of receives by (source, tag) in posting order,
// progress on the calling thread, and the failure of one stream's requests when it is lost.
// See stream_transport.h.
#include "transport/stream/stream_transport.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <list>
#include <new>
#include <vector>

namespace equarx::transport {
namespace {

constexpr size_t kHeaderBytes = 16;      // {u64 tag, u64 length}, host byte order

// ---- Requests ----
enum class Kind : uint8_t { kSend, kRecv };
enum class Outcome : uint8_t { kPending, kOk, kLength, kPeerLost, kCancelled };

// Lives inside Request::state. A receive is linked into its peer's `posted` list (or claims an
// unexpected message); a send is referenced by an Outgoing in its peer's send queue.
struct Entry {
  Entry* prev = nullptr;
  Entry* next = nullptr;
  Kind kind = Kind::kSend;
  Outcome outcome = Outcome::kPending;
  int peer = 0;
  uint64_t tag = 0;
  uint8_t* buf = nullptr;
  size_t bytes = 0;
  size_t got = 0;  // a receive: length of the message that matched it
};
static_assert(sizeof(Entry) <= sizeof(Request::state), "Request storage too small");

Entry* AsEntry(Request* r) { return std::launder(reinterpret_cast<Entry*>(r->state)); }

// A message waiting to go out: header then payload. `entry` is null once the caller cancelled
// it mid-flight (then the rest of the payload lives in `owned`).
struct Outgoing {
  Entry* entry = nullptr;
  uint8_t header[kHeaderBytes];
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  size_t sent = 0;  // header and payload bytes written so far
  std::vector<uint8_t> owned;
};

// A message that arrived before its receive was posted. `data` grows as the payload arrives
// (never sized by the header alone); `length` was reserved from the peer's budget.
struct Unexpected {
  uint64_t tag = 0;
  size_t length = 0;
  std::vector<uint8_t> data;
  bool complete = false;
  Entry* claimed = nullptr;  // the receive that takes it when it completes
};

struct Peer {
  bool open = false;  // a stream to this peer exists and has not been closed
  bool lost = false;
  std::string why;  // why the connection was lost
  std::deque<Outgoing> sendq;
  Entry* posted_head = nullptr;  // receives in posting order
  Entry* posted_tail = nullptr;
  std::list<Unexpected> unexpected;  // a list: `into` must survive erasing others
  size_t buffered = 0;               // the lengths of `unexpected`, against the budget
  // A header whose message has no receive yet and does not fit the budget: reading stops
  // here (TCP flow control holds the sender) until a receive for it is posted or the
  // budget frees up.
  bool parked = false;
  // The message being read: header, then payload into `target` (a posted receive's buffer),
  // an Unexpected's data, or nowhere (a cancelled or mis-sized receive: discard).
  uint8_t header[kHeaderBytes];
  size_t header_got = 0;
  bool in_payload = false;
  uint64_t length = 0, payload_got = 0;
  Entry* target = nullptr;
  Unexpected* into = nullptr;
  // Bytes read ahead from the stream (ByteStreams::ReadAhead): in[in_pos, in_len) are the next
  // bytes of the stream, taken before the stream itself.
  std::vector<uint8_t> in;
  size_t in_pos = 0, in_len = 0;
  bool Buffered() const { return in_pos < in_len; }

  void Post(Entry* e) {
    e->prev = posted_tail;
    e->next = nullptr;
    (posted_tail ? posted_tail->next : posted_head) = e;
    posted_tail = e;
  }
  void Unlink(Entry* e) {
    (e->prev ? e->prev->next : posted_head) = e->next;
    (e->next ? e->next->prev : posted_tail) = e->prev;
    e->prev = e->next = nullptr;
  }
  Entry* TakePosted(uint64_t tag) {
    for (Entry* e = posted_head; e; e = e->next)
      if (e->tag == tag) {
        Unlink(e);
        return e;
      }
    return nullptr;
  }
  bool IsPosted(const Entry* e) const {
    for (const Entry* p = posted_head; p; p = p->next)
      if (p == e) return true;
    return false;
  }
};

void Finish(Entry* e, Outcome o) {
  if (e && e->outcome == Outcome::kPending) e->outcome = o;
}

// Delivers a complete unexpected message to the receive that claimed (or now matches) it.
void Deliver(const Unexpected& u, Entry* e) {
  e->got = u.length;
  if (u.length != e->bytes) return Finish(e, Outcome::kLength);
  if (e->bytes) std::memcpy(e->buf, u.data.data(), e->bytes);
  Finish(e, Outcome::kOk);
}

class StreamTransport final : public Transport {
 public:
  StreamTransport(int rank, std::unique_ptr<ByteStreams> streams, const StreamLimits& limits)
      : rank_(rank), streams_(std::move(streams)), peers_(size_t(streams_->size())),
        name_(streams_->name()), max_message_(limits.max_message_bytes),
        max_unexpected_(limits.max_unexpected_bytes) {
    for (size_t p = 0; p < peers_.size(); ++p) peers_[p].open = int(p) != rank_;
  }
  ~StreamTransport() override {
    for (size_t p = 0; p < peers_.size(); ++p)
      if (peers_[p].open) streams_->Close(int(p));
  }

  int rank() const override { return rank_; }
  int size() const override { return int(peers_.size()); }

  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override {
    EQUARX_RETURN_IF_ERROR(CheckPeer(peer, "send to"));
    if (bytes > max_message_)
      return Unsupported("a single message of " + std::to_string(bytes) + " bytes exceeds the " + name_ +
                         " transport's limit of " + std::to_string(max_message_) + "; use more microshards");
    Entry* e = Init(req, Kind::kSend, peer, tag, const_cast<void*>(buf), bytes);
    bytes_sent_ += bytes;
    if (peer == rank_) return SelfMatch(e);
    Peer& p = peers_[size_t(peer)];
    if (p.lost) {
      Finish(e, Outcome::kPeerLost);
      return Status::Ok();
    }
    Outgoing& o = p.sendq.emplace_back();
    o.entry = e;
    const uint64_t h[2] = {tag, uint64_t(bytes)};
    std::memcpy(o.header, h, kHeaderBytes);
    o.data = static_cast<const uint8_t*>(buf);
    o.bytes = bytes;
    if (p.sendq.size() == 1 && !corked_) Write(p);  // start at once: the kernel moves it from here on
    return Status::Ok();
  }

  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override {
    EQUARX_RETURN_IF_ERROR(CheckPeer(peer, "receive from"));
    Entry* e = Init(req, Kind::kRecv, peer, tag, buf, bytes);
    if (peer == rank_) return SelfMatch(e);
    Peer& p = peers_[size_t(peer)];
    for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it) {
      if (it->tag != tag || it->claimed) continue;
      if (!it->complete) {
        it->claimed = e;  // still arriving: delivered when its last byte is in
        return Status::Ok();
      }
      Deliver(*it, e);
      p.buffered -= it->length;
      p.unexpected.erase(it);
      Unpark(p);  // the budget grew
      if (ReadAhead(p)) Read(p);  // what was read ahead does not wake a wait again
      return Status::Ok();
    }
    if (p.lost) {
      Finish(e, Outcome::kPeerLost);
      return Status::Ok();
    }
    p.Post(e);
    Unpark(p);  // the held message may be this one
    if (ReadAhead(p)) Read(p);
    return Status::Ok();
  }

  Status Wait(Request* req, Deadline deadline) override {
    Entry* e = AsEntry(req);
    SpinUntil(spin(), [&] {
      Progress(0);
      return e->outcome != Outcome::kPending;
    });
    while (e->outcome == Outcome::kPending) {
      const auto now = Clock::now();
      if (now >= deadline)
        return WaitTimedOut(e->kind == Kind::kSend, e->peer);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      Progress(int(std::min<int64_t>(left.count() + 1, 1000)));
    }
    return ResultOf(e);
  }

  bool Test(Request* req, Status* status) override {
    Entry* e = AsEntry(req);
    if (e->outcome == Outcome::kPending) Progress(0);
    if (e->outcome == Outcome::kPending) return false;
    *status = ResultOf(e);
    return true;
  }

  void Cancel(Request* req) override {
    Entry* e = AsEntry(req);
    if (e->outcome != Outcome::kPending) return;
    e->outcome = Outcome::kCancelled;
    if (e->peer == rank_) {
      self_.erase(std::remove(self_.begin(), self_.end(), e), self_.end());
      return;
    }
    Peer& p = peers_[size_t(e->peer)];
    if (e->kind == Kind::kRecv) {
      if (p.target == e) p.target = nullptr;  // the rest of that message is discarded
      for (Unexpected& u : p.unexpected)
        if (u.claimed == e) u.claimed = nullptr;  // stays queued for a later receive
      if (p.IsPosted(e)) p.Unlink(e);
      return;
    }
    for (auto it = p.sendq.begin(); it != p.sendq.end(); ++it) {
      if (it->entry != e) continue;
      if (it->sent == 0) {
        p.sendq.erase(it);  // nothing of it on the wire yet
      } else {
        // Partly written: the stream must carry the rest, from a copy of our own.
        const size_t done = it->sent > kHeaderBytes ? it->sent - kHeaderBytes : 0;
        it->owned.assign(it->data + done, it->data + it->bytes);
        it->data = it->owned.data();
        it->bytes -= done;
        it->sent -= done;
        it->entry = nullptr;
      }
      return;
    }
  }

  void Cork(bool on) override {
    corked_ = on;
    if (on) return;
    for (Peer& p : peers_)
      if (!p.lost && !p.sendq.empty()) Write(p);
  }

  void Abort(const std::string& why) override {
    for (Peer& p : peers_)
      if (p.open) Lose(p, "this rank ended its connections: " + why);
  }

  uint64_t bytes_sent() const override { return bytes_sent_; }

 private:
  Status CheckPeer(int peer, const char* what) const {
    if (peer < 0 || peer >= size()) return InvalidArgument(std::string(what) + " rank out of range");
    return Status::Ok();
  }
  Entry* Init(Request* req, Kind kind, int peer, uint64_t tag, void* buf, size_t bytes) {
    Entry* e = new (req->state) Entry();
    e->kind = kind;
    e->peer = peer;
    e->tag = tag;
    e->buf = static_cast<uint8_t*>(buf);
    e->bytes = bytes;
    return e;
  }
  Status ResultOf(const Entry* e) const {
    switch (e->outcome) {
      case Outcome::kOk: return Status::Ok();
      case Outcome::kLength:
        return LengthMismatch(e->peer, e->got, e->bytes);
      case Outcome::kPeerLost:
        return RemoteError("connection to rank " + std::to_string(e->peer) + " lost: " +
                           peers_[size_t(e->peer)].why);
      default: return Internal("request was cancelled");
    }
  }

  // Bytes of the peer's stream already read ahead, here or in the stream (a record layer's
  // buffer): no readiness will announce them, so whoever makes them readable reads them.
  bool ReadAhead(const Peer& p) const { return p.Buffered() || streams_->Buffered(int(&p - peers_.data())); }

  // Messages to ourselves: matched in memory, never touching a socket.
  Status SelfMatch(Entry* e) {
    for (auto it = self_.begin(); it != self_.end(); ++it) {
      Entry* o = *it;
      if (o->kind == e->kind || o->tag != e->tag) continue;
      self_.erase(it);
      if (e->kind == Kind::kSend) MatchSelf(e, o); else MatchSelf(o, e);
      return Status::Ok();
    }
    self_.push_back(e);
    return Status::Ok();
  }
  void MatchSelf(Entry* s, Entry* r) {
    r->got = s->bytes;
    if (s->bytes != r->bytes) {
      Finish(r, Outcome::kLength);
      Finish(s, Outcome::kLength);
      return;
    }
    if (s->bytes) std::memcpy(r->buf, s->buf, s->bytes);
    Finish(r, Outcome::kOk);
    Finish(s, Outcome::kOk);
  }

  // Marks the connection dead: every request still tied to it fails.
  void Lose(Peer& p, std::string why) {
    if (p.lost) return;
    p.lost = true;
    p.why = std::move(why);
    for (Outgoing& o : p.sendq) Finish(o.entry, Outcome::kPeerLost);
    p.sendq.clear();
    while (Entry* e = p.posted_head) {
      p.Unlink(e);
      Finish(e, Outcome::kPeerLost);
    }
    Finish(p.target, Outcome::kPeerLost);
    p.target = nullptr;
    for (auto it = p.unexpected.begin(); it != p.unexpected.end();) {
      if (it->complete) { ++it; continue; }  // whole messages can still be received
      Finish(it->claimed, Outcome::kPeerLost);
      p.buffered -= it->length;
      it = p.unexpected.erase(it);
    }
    p.into = nullptr;
    p.parked = false;
    p.in_pos = p.in_len = 0;
    if (p.open) streams_->Close(int(&p - peers_.data()));
    p.open = false;
  }

  // Writes what the peer's queue holds: every queued frame's remaining header and payload
  // in one Write (up to kMaxPieces pieces), then the written bytes are counted off the frames
  // in order.
  void Write(Peer& p) {
    const int peer = int(&p - peers_.data());
    while (!p.lost && !p.sendq.empty()) {
      ByteStreams::Piece piece[ByteStreams::kMaxPieces];
      int n = 0;
      size_t total = 0;
      for (size_t k = 0; k < p.sendq.size() && n + 2 <= ByteStreams::kMaxPieces; ++k) {
        const Outgoing& o = p.sendq[k];
        if (o.sent < kHeaderBytes) piece[n++] = {o.header + o.sent, kHeaderBytes - o.sent};
        const size_t done = o.sent > kHeaderBytes ? o.sent - kHeaderBytes : 0;
        if (o.bytes > done) piece[n++] = {o.data + done, o.bytes - done};
        total += kHeaderBytes + o.bytes - o.sent;
      }
      size_t w = 0;
      if (total > 0) {
        std::string why;
        switch (streams_->Write(peer, piece, n, &w, &why)) {
          case ByteStreams::Io::kOk: break;
          case ByteStreams::Io::kWouldBlock: return;
          default: return Lose(p, why);
        }
      }
      // Count w off the frames in order, completing those it covers.
      while (!p.sendq.empty()) {
        Outgoing& o = p.sendq.front();
        const size_t take = std::min(w, kHeaderBytes + o.bytes - o.sent);
        o.sent += take;
        w -= take;
        if (o.sent < kHeaderBytes + o.bytes) break;
        Finish(o.entry, Outcome::kOk);
        p.sendq.pop_front();
      }
    }
  }

  // Reads whatever the stream holds (first what was read ahead), message by message, up to a
  // held header.
  void Read(Peer& p) {
    const int peer = int(&p - peers_.data());
    const size_t ahead = streams_->ReadAhead(peer);
    while (!p.lost && !p.parked) {
      uint8_t* dst;
      size_t want;
      if (!p.in_payload) {
        dst = p.header + p.header_got;
        want = kHeaderBytes - p.header_got;
      } else if (p.target) {
        dst = p.target->buf + p.payload_got;
        want = size_t(p.length - p.payload_got);
      } else if (p.into) {
        std::vector<uint8_t>& d = p.into->data;
        if (d.size() == p.payload_got)  // grow with what arrives: doubling, from 64 KiB
          d.resize(std::min<size_t>(p.into->length, std::max<size_t>(2 * d.size(), 1 << 16)));
        dst = d.data() + p.payload_got;
        want = d.size() - size_t(p.payload_got);
      } else {
        discard_.resize(std::max<size_t>(discard_.size(), 1 << 16));
        dst = discard_.data();
        want = size_t(std::min<uint64_t>(p.length - p.payload_got, discard_.size()));
      }
      size_t r = 0;
      if (want && p.Buffered()) {  // bytes read ahead come first
        r = std::min(want, p.in_len - p.in_pos);
        std::memcpy(dst, p.in.data() + p.in_pos, r);
        p.in_pos += r;
      } else if (want) {
        // Fewer bytes than the read-ahead: read ahead into the buffer, one call for the next
        // frames too; more: straight into place.
        const bool refill = want < ahead;
        if (refill && p.in.size() < ahead) p.in.resize(ahead);
        std::string why;
        switch (streams_->Read(peer, refill ? p.in.data() : dst, refill ? ahead : want, &r, &why)) {
          case ByteStreams::Io::kOk: break;
          case ByteStreams::Io::kWouldBlock: return;
          default: return Lose(p, why);
        }
        if (refill) {
          p.in_pos = 0;
          p.in_len = r;
          continue;
        }
      }
      if (!p.in_payload) {
        p.header_got += r;
        if (p.header_got == kHeaderBytes) StartPayload(p);
      } else {
        p.payload_got += uint64_t(r);
      }
      if (p.in_payload && p.payload_got == p.length) EndPayload(p);
    }
  }
  // A whole header is in: where does its payload go?
  void StartPayload(Peer& p) {
    uint64_t h[2];
    std::memcpy(h, p.header, kHeaderBytes);
    p.header_got = 0;
    p.parked = false;
    if (h[1] > max_message_)  // no rank sends this: the stream cannot be trusted further
      return Lose(p, "protocol error: a frame header announced " + std::to_string(h[1]) +
                         " bytes, more than the " + std::to_string(max_message_) + "-byte limit");
    p.length = h[1];
    p.payload_got = 0;
    p.target = p.TakePosted(h[0]);
    p.into = nullptr;
    if (p.target) {
      p.target->got = size_t(p.length);
      if (p.length != p.target->bytes) {  // wrong size: report it, drop the payload
        Finish(p.target, Outcome::kLength);
        p.target = nullptr;
      }
      p.in_payload = true;
      return;
    }
    if (p.length > max_unexpected_ - p.buffered) {  // hold it in the kernel for now
      p.parked = true;
      return;
    }
    Unexpected& u = p.unexpected.emplace_back();
    u.tag = h[0];
    u.length = size_t(p.length);
    p.buffered += u.length;
    p.into = &u;
    p.in_payload = true;
  }
  // Retries a held header after a receive was posted or the budget grew.
  void Unpark(Peer& p) {
    if (!p.parked) return;
    StartPayload(p);
    if (p.in_payload && p.length == 0) EndPayload(p);
  }
  void EndPayload(Peer& p) {
    p.in_payload = false;
    if (p.target) Finish(p.target, Outcome::kOk);
    if (p.into) {
      p.into->complete = true;
      if (Entry* e = p.into->claimed) {
        Deliver(*p.into, e);
        p.buffered -= p.into->length;
        // The claimed message is the newest unexpected one or an older still-arriving one;
        // find and drop it.
        for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it)
          if (&*it == p.into) {
            p.unexpected.erase(it);
            break;
          }
      }
    }
    p.target = nullptr;
    p.into = nullptr;
  }

  // One round of progress: writes and reads on every stream that is ready, waiting up to
  // `timeout_ms` for one to become ready.
  void Progress(int timeout_ms) {
    // Frames already read ahead need no waiting: move them first.
    for (Peer& p : peers_)
      if (!p.lost && !p.parked && ReadAhead(p)) {
        Read(p);
        timeout_ms = 0;
      }
    interest_.clear();
    for (size_t i = 0; i < peers_.size(); ++i) {
      Peer& p = peers_[i];
      if (p.lost || !p.open) continue;
      // A held peer is not read, but its hang-up must still be seen.
      interest_.push_back({int(i), !p.sendq.empty(), !p.parked});
    }
    ready_.clear();
    streams_->Wait(interest_, timeout_ms, &ready_);
    for (const ByteStreams::Ready& r : ready_) {
      Peer& p = peers_[size_t(r.peer)];
      if (r.writable) Write(p);
      if (p.parked && r.hangup) {
        Lose(p, r.why + " while its next message (" + std::to_string(p.length) +
                    " bytes) waited for a receive");
        continue;
      }
      if (r.readable || r.hangup) Read(p);
      if (!p.lost && r.hangup && !r.readable) Lose(p, r.why);
    }
  }

  int rank_;
  std::unique_ptr<ByteStreams> streams_;
  std::vector<Peer> peers_;
  std::string name_;  // for messages: "socket", "shared-memory"
  std::vector<Entry*> self_;  // unmatched messages to/from ourselves, in posting order
  std::vector<ByteStreams::Interest> interest_;
  std::vector<ByteStreams::Ready> ready_;
  std::vector<uint8_t> discard_;
  uint64_t bytes_sent_ = 0;
  bool corked_ = false;  // Cork: Isend queues without writing
  const size_t max_message_;     // StreamLimits::max_message_bytes
  const size_t max_unexpected_;  // StreamLimits::max_unexpected_bytes, per peer
};

}  // namespace

std::unique_ptr<Transport> MakeStreamTransport(int rank, std::unique_ptr<ByteStreams> streams,
                                               const StreamLimits& limits) {
  return std::make_unique<StreamTransport>(rank, std::move(streams), limits);
}

}  // namespace equarx::transport
