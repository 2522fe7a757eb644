// equarx in-process transport (see inproc_transport.h for the design).
#include "transport/inproc/inproc_transport.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace equarx::transport {
namespace {

enum class Kind : uint8_t { kSend, kRecv };
enum State : int { kPosted = 0, kMatched = 1, kDone = 2, kCancelled = 3 };

// Lives inside Request::state.
struct Entry {
  Entry* next = nullptr;
  Kind kind = Kind::kSend;
  int owner = 0;  // rank that posted it (and waits on it)
  int peer = 0;   // destination of a send, source of a receive
  uint64_t tag = 0;
  void* buf = nullptr;
  size_t bytes = 0;
  size_t got = 0;  // bytes the matched send carried (receives)
  std::atomic<int> state{kPosted};
  bool length_error = false;
};
static_assert(sizeof(Entry) <= sizeof(Request::state), "Request storage too small");

Entry* AsEntry(Request* r) { return std::launder(reinterpret_cast<Entry*>(r->state)); }

// Intrusive FIFO of entries.
struct Queue {
  Entry* head = nullptr;
  Entry* tail = nullptr;

  void Push(Entry* e) {
    e->next = nullptr;
    if (tail) tail->next = e; else head = e;
    tail = e;
  }
  // Removes and returns the first entry from rank `from` (the owner of a queued send, the
  // source of a posted receive) with this tag, or nullptr.
  Entry* Take(int from, uint64_t tag) {
    Entry* prev = nullptr;
    for (Entry* e = head; e; prev = e, e = e->next) {
      int key = e->kind == Kind::kSend ? e->owner : e->peer;
      if (key == from && e->tag == tag) {
        Unlink(prev, e);
        return e;
      }
    }
    return nullptr;
  }
  bool Remove(Entry* target) {
    Entry* prev = nullptr;
    for (Entry* e = head; e; prev = e, e = e->next) {
      if (e == target) {
        Unlink(prev, e);
        return true;
      }
    }
    return false;
  }

 private:
  void Unlink(Entry* prev, Entry* e) {
    (prev ? prev->next : head) = e->next;
    if (tail == e) tail = prev;
    e->next = nullptr;
  }
};

struct Mailbox {
  std::mutex mu;
  std::condition_variable cv;
  Queue sends;  // sends addressed to this rank, not yet matched
  Queue recvs;  // receives this rank posted, not yet matched
};

}  // namespace

class InprocFabric {
 public:
  explicit InprocFabric(int ranks) : boxes_(size_t(ranks)) {}
  int size() const { return int(boxes_.size()); }
  Mailbox& box(int r) { return boxes_[size_t(r)]; }

  void Complete(Entry* e) {
    Mailbox& m = box(e->owner);
    {
      std::lock_guard<std::mutex> lock(m.mu);
      e->state.store(kDone, std::memory_order_release);
    }
    m.cv.notify_all();
  }

  // A new entry, in the mailbox of its receiving rank (a send's destination, a receive's
  // owner): under that mailbox's lock, takes the first unmatched entry of the other kind with
  // the same source and tag (a send: receives that rank posted for us; a receive: sends
  // addressed to us) and marks both matched, or queues the entry to wait for its match. A
  // matched pair is then delivered outside the lock.
  void Post(Entry* e) {
    const bool send = e->kind == Kind::kSend;
    Mailbox& m = box(send ? e->peer : e->owner);
    Entry* match;
    {
      std::lock_guard<std::mutex> lock(m.mu);
      match = (send ? m.recvs : m.sends).Take(send ? e->owner : e->peer, e->tag);
      if (match) {
        match->state.store(kMatched, std::memory_order_relaxed);
        e->state.store(kMatched, std::memory_order_relaxed);
      } else {
        (send ? m.sends : m.recvs).Push(e);
      }
    }
    if (match) Deliver(send ? e : match, send ? match : e);
  }

  // Copies a matched pair (both already unlinked and marked matched) and completes both.
  void Deliver(Entry* send, Entry* recv) {
    recv->got = send->bytes;
    if (send->bytes == recv->bytes) {
      if (send->bytes) std::memcpy(recv->buf, send->buf, send->bytes);
    } else {
      recv->length_error = true;
      send->length_error = true;
    }
    Complete(recv);
    Complete(send);
  }

 private:
  std::vector<Mailbox> boxes_;
};

namespace {

class InprocTransport final : public Transport {
 public:
  InprocTransport(std::shared_ptr<InprocFabric> fabric, int rank)
      : fabric_(std::move(fabric)), rank_(rank) {
    SetHosts(fabric_->size(), fabric_->size());  // all in this process: one host
  }

  int rank() const override { return rank_; }
  int size() const override { return fabric_->size(); }

  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override {
    if (peer < 0 || peer >= size()) return InvalidArgument("isend: peer out of range");
    Entry* e = Init(req, Kind::kSend, peer, tag, const_cast<void*>(buf), bytes);
    bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
    fabric_->Post(e);
    return Status::Ok();
  }

  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override {
    if (peer < 0 || peer >= size()) return InvalidArgument("irecv: peer out of range");
    fabric_->Post(Init(req, Kind::kRecv, peer, tag, buf, bytes));
    return Status::Ok();
  }

  Status Wait(Request* req, Deadline deadline) override {
    Entry* e = AsEntry(req);
    SpinUntil(spin(), [e] { return e->state.load(std::memory_order_acquire) == kDone; });
    if (e->state.load(std::memory_order_acquire) != kDone) {
      Mailbox& m = fabric_->box(e->owner);
      std::unique_lock<std::mutex> lock(m.mu);
      if (!m.cv.wait_until(lock, deadline, [e] {
            return e->state.load(std::memory_order_acquire) == kDone;
          })) {
        return WaitTimedOut(e->kind == Kind::kSend, e->peer);
      }
    }
    return ResultOf(e);
  }

  bool Test(Request* req, Status* status) override {
    Entry* e = AsEntry(req);
    if (e->state.load(std::memory_order_acquire) != kDone) return false;
    *status = ResultOf(e);
    return true;
  }

  void Cancel(Request* req) override {
    Entry* e = AsEntry(req);
    int st = e->state.load(std::memory_order_acquire);
    if (st == kDone || st == kCancelled) return;
    // A posted entry sits in exactly one queue: a send in the destination's `sends`, a receive
    // in our own `recvs`. Under that queue's lock it is either still there or already matched.
    Mailbox& q = fabric_->box(e->kind == Kind::kSend ? e->peer : rank_);
    {
      std::lock_guard<std::mutex> lock(q.mu);
      if (e->state.load(std::memory_order_relaxed) == kPosted) {
        (e->kind == Kind::kSend ? q.sends : q.recvs).Remove(e);
        e->state.store(kCancelled, std::memory_order_release);
        return;
      }
    }
    // Matched: the other side is copying; wait for it to finish with our buffer.
    Mailbox& m = fabric_->box(e->owner);
    std::unique_lock<std::mutex> lock(m.mu);
    m.cv.wait(lock, [e] { return e->state.load(std::memory_order_acquire) == kDone; });
  }

  uint64_t bytes_sent() const override { return bytes_sent_.load(std::memory_order_relaxed); }

 private:
  Entry* Init(Request* req, Kind kind, int peer, uint64_t tag, void* buf, size_t bytes) {
    Entry* e = new (req->state) Entry();
    e->kind = kind;
    e->owner = rank_;
    e->peer = peer;
    e->tag = tag;
    e->buf = buf;
    e->bytes = bytes;
    return e;
  }
  static Status ResultOf(const Entry* e) {
    if (!e->length_error) return Status::Ok();
    return LengthMismatch(e->peer, e->got, e->bytes);
  }

  std::shared_ptr<InprocFabric> fabric_;
  int rank_;
  std::atomic<uint64_t> bytes_sent_{0};
};

}  // namespace

std::shared_ptr<InprocFabric> CreateInprocFabric(int ranks) {
  return std::make_shared<InprocFabric>(ranks);
}

std::unique_ptr<Transport> CreateInprocTransport(std::shared_ptr<InprocFabric> fabric, int rank) {
  return std::make_unique<InprocTransport>(std::move(fabric), rank);
}

}  // namespace equarx::transport
