// equarx sub-transport — a group of some ranks of another transport, seen as ranks 0..k-1.
//
// Sub-rank i is rank members[i] of the parent. Messages go through the parent unchanged
// (the caller keeps tags of different groups apart; algo/hierarchical.cc gives every group its
// own tag range), so a request is the parent's request and the parent's deadlines, errors and
// byte count apply. Error messages name the parent's ranks.
#pragma once

#include <span>

#include "transport/transport.h"

namespace equarx::transport {

class SubTransport final : public Transport {
 public:
  /// `members` are parent ranks (they must outlive this object), `me` the index of the
  /// parent's own rank among them.
  SubTransport(Transport* parent, std::span<const int> members, int me)
      : parent_(parent), members_(members), me_(me) {}

  int rank() const override { return me_; }
  int size() const override { return int(members_.size()); }
  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override {
    return parent_->Isend(members_[size_t(peer)], tag, buf, bytes, req);
  }
  void Abort(const std::string& why) override { parent_->Abort(why); }
  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override {
    return parent_->Irecv(members_[size_t(peer)], tag, buf, bytes, req);
  }
  Status Wait(Request* req, Deadline deadline) override { return parent_->Wait(req, deadline); }
  bool Test(Request* req, Status* status) override { return parent_->Test(req, status); }
  void Cancel(Request* req) override { parent_->Cancel(req); }
  uint64_t bytes_sent() const override { return parent_->bytes_sent(); }

 private:
  Transport* parent_;
  std::span<const int> members_;
  int me_;
};

}  // namespace equarx::transport
