// equarx call I/O: the requests of one collective call and the codec kernels it runs, with
// the bookkeeping every algorithm needs and none should write twice.
//
// Request i lives in scratch; live[i] marks whether it must still be waited on. Every wait
// has the call's deadline. Whatever is still live when the CallIo goes away (an early return
// on error) is cancelled first, so no buffer stays exposed to the transport. The diagnostic
// execution modes switch off the codec (wire only) or the messages (codec only).
#pragma once

#include "algo/scratch.h"
#include "codec/codec.h"
#include "equarx/options.h"
#include "transport/transport.h"

namespace equarx::algo {

class CallIo {
 public:
  CallIo(transport::Transport* t, Scratch* s, size_t requests, transport::Deadline deadline,
         ExecutionMode mode)
      : t_(t), n_(requests), deadline_(deadline),
        codec_on_(mode != ExecutionMode::kWireOnly), wire_on_(mode != ExecutionMode::kCodecOnly) {
    reqs_ = s->Requests(requests, &live_);
  }
  ~CallIo() { CancelAll(); }
  CallIo(const CallIo&) = delete;
  CallIo& operator=(const CallIo&) = delete;

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
  Status WaitAll() {
    for (size_t i = 0; i < n_; ++i) EQUARX_RETURN_IF_ERROR(Wait(i));
    return Status::Ok();
  }
  void CancelAll() {
    for (size_t i = 0; i < n_; ++i)
      if (live_[i]) {
        t_->Cancel(&reqs_[i]);
        live_[i] = 0;
      }
  }

  // The codec kernels (codec/codec.h), skipped in wire-only mode.
  template <typename... A> void Encode(A... a) { if (codec_on_) codec::Encode(a...); }
  template <typename... A> void Decode(A... a) { if (codec_on_) codec::Decode(a...); }
  template <typename... A> void DecodeAccumulate(A... a) {
    if (codec_on_) codec::DecodeAccumulate(a...);
  }
  template <typename... A> void DecodeAccumulateEncode(A... a) {
    if (codec_on_) codec::DecodeAccumulateEncode(a...);
  }
  template <typename... A> void Convert(A... a) { if (codec_on_) codec::Convert(a...); }

 private:
  transport::Transport* t_;
  size_t n_;
  transport::Deadline deadline_;
  bool codec_on_, wire_on_;
  transport::Request* reqs_ = nullptr;
  uint8_t* live_ = nullptr;
};

}  // namespace equarx::algo
