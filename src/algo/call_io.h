// equarx call I/O: the requests of one collective call and the codec kernels it runs, with
// the bookkeeping every algorithm needs and none should write twice.
//
// Request i lives in scratch; live[i] marks whether it must still be waited on. Every wait
// has the call's deadline. Whatever is still live when the CallIo goes away (an early return
// on error) is cancelled first, so no buffer stays exposed to the transport. The diagnostic
// execution modes switch off the codec (wire only) or the messages (codec only).
#pragma once

#include <algorithm>

#include "algo/scratch.h"
#include "codec/codec.h"
#include "equarx/options.h"
#include "transport/transport.h"

namespace equarx::algo {

class CallIo {
 public:
  CallIo(transport::Transport* t, Scratch* s, size_t requests, transport::Deadline deadline,
         ExecutionMode mode, codec::EncodeStats* stats = nullptr)
      : t_(t), n_(requests), deadline_(deadline),
        codec_on_(mode != ExecutionMode::kWireOnly), wire_on_(mode != ExecutionMode::kCodecOnly),
        stats_(stats) {
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

  // The codec kernels (codec/codec.h), skipped in wire-only mode. Every encode adds its
  // telemetry to the call's stats (when asked for).
  void Encode(const codec::WireSpec& w, DType t, const void* src, size_t n, uint8_t* wire) {
    if (codec_on_) codec::Encode(w, t, src, n, wire, stats_);
  }
  void DecodeAccumulateEncode(const codec::WireSpec& w, const uint8_t* in, size_t n, DType t,
                              const void* local, uint8_t* out) {
    if (codec_on_) codec::DecodeAccumulateEncode(w, in, n, t, local, out, stats_);
  }
  template <typename... A> void Decode(A... a) { if (codec_on_) codec::Decode(a...); }
  template <typename... A> void DecodeAccumulate(A... a) {
    if (codec_on_) codec::DecodeAccumulate(a...);
  }
  template <typename... A> void Convert(A... a) { if (codec_on_) codec::Convert(a...); }

  // ---- Error feedback (RunArgs::residual) ----
  /// staged <- f32(send) + residual, then residual <- 0: the call's contribution, to which
  /// every encode of this rank adds back what it loses (EncodeWithLoss, ResultLoss).
  void StageResidual(DType t, const void* send, size_t n, float* residual, float* staged) {
    if (n == 0) return;
    codec::DecodeAccumulate(codec::WireSpec{codec::RawFormatOf(t), 0}, static_cast<const uint8_t*>(send),
                            n, DType::kFloat32, residual, staged);
    std::fill(residual, residual + n, 0.0f);
  }
  /// wire <- encode(exact); residual += exact - decode(wire). `tmp`: n f32 of scratch.
  void EncodeWithLoss(const codec::WireSpec& w, const float* exact, size_t n, uint8_t* wire,
                      float* tmp, float* residual) {
    Encode(w, DType::kFloat32, exact, n, wire);
    codec::Decode(w, wire, n, DType::kFloat32, tmp);
    codec::AccumulateLoss(DType::kFloat32, tmp, exact, n, residual);
  }
  /// residual += exact - result, for the elements of the shard this rank owns.
  void ResultLoss(DType t, const void* result, const float* exact, size_t n, float* residual) {
    codec::AccumulateLoss(t, result, exact, n, residual);
  }

 private:
  transport::Transport* t_;
  size_t n_;
  transport::Deadline deadline_;
  bool codec_on_, wire_on_;
  codec::EncodeStats* stats_;
  transport::Request* reqs_ = nullptr;
  uint8_t* live_ = nullptr;
};

}  // namespace equarx::algo
