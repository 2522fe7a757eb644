// equarx call validation (see validate.h).
#include "core/validate.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace equarx::core {
namespace {
constexpr uint32_t kMagic = 0x45515258;  // "EQRX"
constexpr uint32_t kVersion = 2;

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

Status CheckLocal(const void* send, const void* recv, size_t count, DType dtype,
                  const AllReduceOptions& o, size_t microshards, const float* residual) {
  if (uint8_t(dtype) > uint8_t(DType::kFloat16))
    return InvalidArgument("unsupported dtype " + std::to_string(int(dtype)));
  if (uint8_t(o.algorithm) > uint8_t(Algorithm::kAuto))
    return InvalidArgument("unknown algorithm " + std::to_string(int(o.algorithm)));
  if (o.phases != Phases::kRS && o.phases != Phases::kAG && o.phases != Phases::kRSAG)
    return InvalidArgument("unknown phases " + std::to_string(int(o.phases)));
  if (uint8_t(o.codec) > uint8_t(Codec::kFp8E5M2))
    return InvalidArgument("unknown codec " + std::to_string(int(o.codec)));
  if (uint8_t(o.rounding) > uint8_t(Rounding::kStochastic))
    return InvalidArgument("unknown rounding " + std::to_string(int(o.rounding)));
  if (o.rounding == Rounding::kStochastic && !SupportsStochasticRounding(o.codec))
    return InvalidArgument("stochastic rounding needs int8 or int4, not " +
                           std::string(CodecName(o.codec)));
  if (uint8_t(o.mode) > uint8_t(ExecutionMode::kCodecOnly))
    return InvalidArgument("unknown execution mode " + std::to_string(int(o.mode)));
  if (o.block < kMinBlock || o.block > kMaxBlock)
    return InvalidArgument("block size " + std::to_string(o.block) + " is out of range [" +
                           std::to_string(kMinBlock) + ", " + std::to_string(kMaxBlock) + "]");
  if (microshards < 1 || microshards > kMaxMicroshards)
    return InvalidArgument("microshards " + std::to_string(microshards) + " is out of range [1, " +
                           std::to_string(kMaxMicroshards) + "]");
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
    if (o.mode != ExecutionMode::kNormal)
      return InvalidArgument("error feedback (residual) needs the normal execution mode");
    const size_t rbytes = count * sizeof(float);
    if (Overlap(residual, rbytes, send, bytes) || Overlap(residual, rbytes, recv, bytes))
      return InvalidArgument("the residual buffer overlaps the send or recv buffer");
  }
  return Status::Ok();
}

Descriptor Describe(size_t count, DType dtype, const AllReduceOptions& o, size_t microshards,
                    uint64_t tune_hash, const Status& local) {
  Descriptor d;
  std::memset(&d, 0, sizeof d);
  d.magic = kMagic;
  d.version = kVersion;
  d.count = count;
  d.quantize_min_bytes = o.quantize_min_bytes;
  d.block = uint32_t(std::min<size_t>(o.block, UINT32_MAX));
  d.microshards = uint32_t(std::min<size_t>(microshards, UINT32_MAX));
  d.dtype = uint8_t(dtype);
  d.algorithm = uint8_t(o.algorithm);
  d.phases = uint8_t(o.phases);
  d.codec = uint8_t(o.codec);
  d.rounding = uint8_t(o.rounding);
  d.seed = o.seed;
  d.f32_partials = o.f32_partials ? 1 : 0;
  d.mode = uint8_t(o.mode);
  d.tune_hash = o.algorithm == Algorithm::kAuto ? tune_hash : 0;
  d.error_code = uint32_t(local.code());
  std::strncpy(d.error, local.message().c_str(), sizeof d.error - 1);
  return d;
}

namespace {

// First field in which `b` differs from `a`, as "name a vs b", or "" if none.
std::string Diff(const Descriptor& a, const Descriptor& b) {
  auto f = [](const char* name, uint64_t x, uint64_t y) {
    return std::string(name) + " " + std::to_string(y) + " (rank 0 has " + std::to_string(x) + ")";
  };
  if (a.magic != b.magic || a.version != b.version) return f("protocol", a.version, b.version);
  if (a.count != b.count) return f("count", a.count, b.count);
  if (a.dtype != b.dtype) return f("dtype", a.dtype, b.dtype);
  if (a.algorithm != b.algorithm) return f("algorithm", a.algorithm, b.algorithm);
  if (a.phases != b.phases) return f("phases", a.phases, b.phases);
  if (a.codec != b.codec) return f("codec", a.codec, b.codec);
  if (a.rounding != b.rounding) return f("rounding", a.rounding, b.rounding);
  if (a.seed != b.seed) return f("seed", a.seed, b.seed);
  if (a.mode != b.mode) return f("mode", a.mode, b.mode);
  if (a.tune_hash != b.tune_hash) return "a different tune table (EQUARX_TUNE_FILE) than rank 0";
  if (a.f32_partials != b.f32_partials) return f("f32_partials", a.f32_partials, b.f32_partials);
  if (a.block != b.block) return f("block", a.block, b.block);
  if (a.microshards != b.microshards) return f("microshards", a.microshards, b.microshards);
  if (a.quantize_min_bytes != b.quantize_min_bytes)
    return f("quantize_min_bytes", a.quantize_min_bytes, b.quantize_min_bytes);
  return "";
}

}  // namespace

Status Agree(transport::Transport* t, const Descriptor& mine, uint64_t tag,
             transport::Deadline deadline, Descriptor* all, transport::Request* reqs) {
  const int n = t->size(), me = t->rank();
  all[me] = mine;
  Status st;
  int posted = 0;
  for (int p = 0; p < n && st.ok(); ++p) {
    if (p == me) continue;
    st = t->Irecv(p, tag, &all[p], sizeof(Descriptor), &reqs[2 * p]);
    if (st.ok()) st = t->Isend(p, tag, &mine, sizeof(Descriptor), &reqs[2 * p + 1]);
    if (st.ok()) posted = p + 1;
  }
  // Wait for everything (cancel what is left on failure) before reading.
  for (int p = 0; p < posted; ++p) {
    if (p == me) continue;
    for (int j = 0; j < 2; ++j) {
      if (st.ok()) {
        Status w = t->Wait(&reqs[2 * p + j], deadline);
        if (!w.ok()) {
          st = Status(w.code(), "argument check: " + w.message());
          t->Cancel(&reqs[2 * p + j]);
        }
      } else {
        t->Cancel(&reqs[2 * p + j]);
      }
    }
  }
  if (!st.ok()) return st;
  for (int p = 0; p < n; ++p) {
    if (all[p].error_code != 0) {
      std::string msg(all[p].error, strnlen(all[p].error, sizeof all[p].error));
      return Status(StatusCode(all[p].error_code),
                    p == me ? msg : "rank " + std::to_string(p) + ": " + msg);
    }
  }
  for (int p = 1; p < n; ++p) {
    std::string d = Diff(all[0], all[p]);
    if (!d.empty()) return Mismatch("ranks disagree: rank " + std::to_string(p) + " passes " + d);
  }
  return Status::Ok();
}

}  // namespace equarx::core
