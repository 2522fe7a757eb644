// equarx request set: the transport requests of one collective call, the bookkeeping every
// schedule needs and none should write twice (the executor, one_shot and hierarchical use it).
//
// Request i lives in scratch (Scratch::Requests: nothing is allocated once warm); live[i]
// marks whether it must still be waited on. Every wait has the call's deadline. Whatever is
// still live when the set goes away (an early return on error) is cancelled first, so no
// buffer stays exposed to the transport. With the wire off (the diagnostic codec-only mode)
// nothing is sent or received and every wait succeeds at once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/scratch.h"
#include "equarx/status.h"
#include "transport/transport.h"

namespace equarx::algo {

class RequestSet {
 public:
  RequestSet(transport::Transport* t, Scratch* s, size_t requests, transport::Deadline deadline,
             bool wire_on = true)
      : t_(t), n_(requests), deadline_(deadline), wire_on_(wire_on) {
    reqs_ = s->Requests(requests, &live_);
  }
  ~RequestSet() { CancelAll(); }
  RequestSet(const RequestSet&) = delete;
  RequestSet& operator=(const RequestSet&) = delete;

  size_t size() const { return n_; }
  bool live(size_t i) const { return live_[i] != 0; }

  Status Send(size_t i, int peer, uint64_t tag, const void* buf, size_t bytes) {
    if (!wire_on_) return Status::Ok();
    Status st = t_->Isend(peer, tag, buf, bytes, &reqs_[i]);
    if (st.ok()) live_[i] = 1;
    return st;
  }
  Status Recv(size_t i, int peer, uint64_t tag, void* buf, size_t bytes) {
    if (!wire_on_) return Status::Ok();
    Status st = t_->Irecv(peer, tag, buf, bytes, &reqs_[i]);
    if (st.ok()) live_[i] = 1;
    return st;
  }
  Status Wait(size_t i) {
    if (!live_[i]) return Status::Ok();
    Status st = t_->Wait(&reqs_[i], deadline_);
    if (st.ok()) live_[i] = 0;
    return st;
  }
  /// Whether request i is done (not live, or completed now: then *status is its outcome and
  /// it is no longer live), without blocking.
  bool Test(size_t i, Status* status) {
    *status = Status::Ok();
    if (!live_[i]) return true;
    if (!t_->Test(&reqs_[i], status)) return false;
    live_[i] = 0;
    return true;
  }
  Status WaitAll() {
    for (size_t i = 0; i < n_; ++i) EQUARX_RETURN_IF_ERROR(Wait(i));
    return Status::Ok();
  }
  /// Withdraws request i if it is live.
  void Cancel(size_t i) {
    if (!live_[i]) return;
    t_->Cancel(&reqs_[i]);
    live_[i] = 0;
  }
  void CancelAll() {
    for (size_t i = 0; i < n_; ++i) Cancel(i);
  }

 private:
  transport::Transport* t_;
  size_t n_;
  transport::Deadline deadline_;
  bool wire_on_;
  transport::Request* reqs_ = nullptr;
  uint8_t* live_ = nullptr;
};

}  // namespace equarx::algo
