// equarx call validation (see validate.h).
#include "core/validate.h"

#include "algo/cost_model.h"
#include "common/hash.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace equarx::core {
namespace {
constexpr uint32_t kMagic = 0x45515258;  // "EQRX"
constexpr uint32_t kVersion = 6;  // 5: rotation state "not checked"; 6: sent_ahead

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

static_assert(sizeof(Descriptor) == 8 + 8 + 8 + 8 + 8 + 8 * kMaxDescribedFields + 4 + 116,
              "Descriptor layout");
static_assert(sizeof(Descriptor) == algo::kCheckBytes, "the cost model charges the descriptor's size");

Status CheckLocal(const void* send, const void* recv, size_t count, DType dtype,
                  const AllReduceOptions& o, const float* residual) {
  if (uint8_t(dtype) > uint8_t(DType::kFloat16))
    return InvalidArgument("unsupported dtype " + std::to_string(int(dtype)));
  EQUARX_RETURN_IF_ERROR(CheckOptions(o));
  if (count > (SIZE_MAX / 8) / DTypeSize(dtype))
    return InvalidArgument("count " + std::to_string(count) + " is too large");
  if (count == 0) return Status::Ok();
  if (!send) return InvalidArgument("send buffer is null");
  if (!recv) return InvalidArgument("recv buffer is null");
  const size_t bytes = count * DTypeSize(dtype);
  if (send != recv && Overlap(send, bytes, recv, bytes))
    return InvalidArgument("send and recv buffers overlap without being the same buffer");
  if (residual) {
    if (o.algorithm == Algorithm::kNaiveFp8)
      return InvalidArgument("error feedback (residual) is not available with naive_fp8");
    if (o.algorithm == Algorithm::kHierarchical)
      return InvalidArgument("error feedback (residual) is not available with hierarchical yet");
    if (o.mode != ExecutionMode::kNormal)
      return InvalidArgument("error feedback (residual) needs the normal execution mode");
    const size_t rbytes = count * sizeof(float);
    if (Overlap(residual, rbytes, send, bytes) || Overlap(residual, rbytes, recv, bytes))
      return InvalidArgument("the residual buffer overlaps the send or recv buffer");
  }
  return Status::Ok();
}

Descriptor Describe(size_t count, DType dtype, const AllReduceOptions& o, uint64_t tune_hash,
                    RotationInput rotation_input, uint64_t sent_ahead, const Status& local) {
  Descriptor d;
  std::memset(&d, 0, sizeof d);
  d.magic = kMagic;
  d.version = kVersion;
  d.count = count;
  d.dtype = uint8_t(dtype);
  d.rotation_input = rotation_input;
  d.sent_ahead = sent_ahead;
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  for (size_t i = 0; i < n; ++i)
    if (t[i].agreed) d.fields[i] = t[i].get(o);
  d.tune_hash = tune_hash;
  d.error_code = uint32_t(local.code());
  std::strncpy(d.error, local.message().c_str(), sizeof d.error - 1);
  return d;
}

namespace {

// First field in which `b` differs from `a`, as "name b (rank 0 has a)", or "" if none.
std::string Diff(const Descriptor& a, const Descriptor& b) {
  auto f = [](std::string_view name, const std::string& x, const std::string& y) {
    return std::string(name) + " " + y + " (rank 0 has " + x + ")";
  };
  auto num = [](uint64_t v) { return std::to_string(v); };
  if (a.magic != b.magic || a.version != b.version)
    return f("protocol", num(a.version), num(b.version));
  if (a.count != b.count) return f("count", num(a.count), num(b.count));
  if (a.dtype != b.dtype)
    return f("dtype", std::string(DTypeName(DType(a.dtype))), std::string(DTypeName(DType(b.dtype))));
  // Every option that differs (one asked for can resolve another: scale bf16 takes block 64).
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  std::string options;
  for (size_t i = 0; i < n; ++i)
    if (a.fields[i] != b.fields[i])
      options += (options.empty() ? "" : ", ") +
                 f(t[i].name, FormatOptionValue(t[i], a.fields[i]), FormatOptionValue(t[i], b.fields[i]));
  if (!options.empty()) return options;
  if (a.tune_hash != b.tune_hash)
    return "a different table for auto than rank 0 (EQUARX_TUNE_FILE, or without one the cost "
           "model's network: EQUARX_LINK_GBIT, EQUARX_STEP_US, EQUARX_MESSAGE_US)";
  return "";
}

}  // namespace

Status Exchange::Start(transport::Transport* t, const Descriptor& mine, uint64_t tag,
                       transport::Deadline deadline) {
  const int n = t->size(), me = t->rank();
  t_ = t;
  deadline_ = deadline;
  all_[size_t(me)] = mine;
  start_ = Status::Ok();
  posted_ = 0;
  for (int p = 0; p < n && start_.ok(); ++p) {
    if (p == me) continue;
    start_ = t->Irecv(p, tag, &all_[size_t(p)], sizeof(Descriptor), &reqs_[2 * size_t(p)]);
    if (start_.ok()) start_ = t->Isend(p, tag, &all_[size_t(me)], sizeof(Descriptor), &reqs_[2 * size_t(p) + 1]);
    if (start_.ok()) posted_ = p + 1;
  }
  return Status::Ok();  // a failure to post is the verdict (Finish), once the rest is withdrawn
}

Status Exchange::Finish() {
  transport::Transport* t = t_;
  const int n = t->size(), me = t->rank();
  Status st = start_;
  received_ = false;
  // Wait for everything (cancel what is left on failure) before reading.
  for (int p = 0; p < posted_; ++p) {
    if (p == me) continue;
    for (size_t j = 0; j < 2; ++j) {
      transport::Request* req = &reqs_[2 * size_t(p) + j];
      if (st.ok()) {
        Status w = t->Wait(req, deadline_);
        if (!w.ok()) {
          st = Status(w.code(), "argument check: " + w.message());
          t->Cancel(req);
        }
      } else {
        t->Cancel(req);
      }
    }
  }
  if (!st.ok()) return st;
  received_ = true;
  for (int p = 0; p < n; ++p) {
    const Descriptor& d = all_[size_t(p)];
    if (d.error_code != 0) {
      std::string msg(d.error, strnlen(d.error, sizeof d.error));
      return Status(StatusCode(d.error_code), p == me ? msg : "rank " + std::to_string(p) + ": " + msg);
    }
  }
  for (int p = 1; p < n; ++p) {
    std::string d = Diff(all_[0], all_[size_t(p)]);
    if (!d.empty()) return Mismatch("ranks disagree: rank " + std::to_string(p) + " passes " + d);
  }
  return Status::Ok();
}

static_assert(sizeof(CheckFrame) == algo::kCheckFrameBytes, "the cost model charges the frame's size");

uint64_t CallHash(const Descriptor& d) {
  Descriptor c = d;
  c.rotation_input = RotationInput::kSafe;
  c.sent_ahead = 0;
  c.error_code = 0;
  std::memset(c.error, 0, sizeof c.error);
  return common::Fnv1a(&c, sizeof c);
}

Status CheckTree::Run(transport::Transport* t, const Descriptor& mine, uint64_t tag_base,
                      transport::Deadline deadline, algo::OneShotCall* call) {
  const int n = t->size(), me = t->rank();
  algo::OneShotCall* rd = call && call->recursive_doubling() ? call : nullptr;
  algo::OneShotCall* one_shot = call && !rd ? call : nullptr;
  const uint64_t h = CallHash(mine);
  frame_ = CheckFrame{};
  frame_.lo = frame_.hi = h;
  frame_.error = mine.error_code != 0;
  frame_.rotation_inputs = InputBit(mine.rotation_input);
  agreed_ = false;
  rd_done_ = rd != nullptr;
  // Whether a group's frame says that each of its ranks makes this rank's call.
  auto agrees = [h](const CheckFrame& f) { return f.lo == h && f.hi == h && !f.error; };
  bool posted[2] = {false, false};  // which of reqs_ this step posted (Cancel needs a posted one)
  auto failed = [&](const Status& st) {
    for (int i = 0; i < 2; ++i)
      if (posted[i]) t->Cancel(&reqs_[i]);
    return Status(st.code(), "argument check: " + st.message());
  };
  for (int k = 0, K = algo::Log2(n); k < K; ++k) {
    const int p = me ^ (1 << k);
    const bool ride = rd && agrees(frame_);
    out_ = frame_;
    out_.data_bytes = ride ? rd->StepBytes() : 0;
    posted[0] = posted[1] = false;
    Status st = t->Irecv(p, CheckFrameTag(tag_base, k), &in_, sizeof in_, &reqs_[0]);
    if (!st.ok()) return failed(st);
    posted[0] = true;
    if (ride && !(st = rd->PostStep(k, p)).ok()) return failed(st);
    t->Cork(true);  // the frame and the partial sum leave together
    st = t->Isend(p, CheckFrameTag(tag_base, k), &out_, sizeof out_, &reqs_[1]);
    posted[1] = st.ok();
    if (st.ok() && ride) st = rd->SendStep(k, p);
    if (st.ok() && one_shot && k > 0) st = one_shot->SendTo(p);  // whatever the verdict: Drain counts it
    t->Cork(false);
    if (!st.ok()) return failed(st);
    st = t->Wait(&reqs_[0], deadline);
    if (st.ok()) st = t->Wait(&reqs_[1], deadline);
    if (!st.ok()) return failed(st);
    frame_.lo = std::min(frame_.lo, in_.lo);
    frame_.hi = std::max(frame_.hi, in_.hi);
    frame_.error |= in_.error;
    frame_.rotation_inputs |= in_.rotation_inputs;
    if (ride) {
      // Both groups make this call: the partial sums add up. Otherwise what came is dropped.
      const bool add = agrees(frame_) && in_.data_bytes == rd->StepBytes();
      st = in_.data_bytes == 0 ? rd->WithdrawStep() : rd->FinishStep(p, add);
      rd_done_ = rd_done_ && add;
    } else if (in_.data_bytes > 0) {  // a partial sum this rank does not take
      rd_done_ = false;
      if (sink_.size() < in_.data_bytes) sink_.resize(size_t(in_.data_bytes));
      posted[1] = false;
      st = t->Irecv(p, algo::RecursiveDoublingTag(tag_base, k), sink_.data(), size_t(in_.data_bytes), &reqs_[0]);
      posted[0] = st.ok();
      if (st.ok()) st = t->Wait(&reqs_[0], deadline);
    } else if (rd) {
      rd_done_ = false;
    }
    if (!st.ok()) return failed(st);
  }
  agreed_ = frame_.lo == frame_.hi && !frame_.error;
  if (rd && rd_done_) rd->StepsRan();
  return Status::Ok();
}

}  // namespace equarx::core
