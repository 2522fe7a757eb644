// equarx call validation: local argument checks plus the descriptor exchange that makes an
// invalid or mismatched call fail on every rank instead of hanging the others.
#pragma once

#include <cstddef>
#include <cstdint>

#include "equarx/options.h"
#include "equarx/status.h"
#include "transport/transport.h"

namespace equarx::core {

/// What a rank says about its call before any data moves. Trivially copyable, fixed size.
struct Descriptor {
  uint32_t magic;
  uint32_t version;
  uint64_t count;
  uint64_t quantize_min_bytes;
  uint32_t block;
  uint32_t microshards;
  uint8_t dtype, algorithm, phases, codec, f32_partials, mode, rounding;
  uint64_t seed;
  uint64_t tune_hash;   // hash of the tune table when algorithm is auto, else 0
  uint32_t error_code;  // StatusCode of the local check, 0 if fine
  char error[112];      // its message, truncated
};

/// Checks this rank's arguments only. `microshards` is the resolved count; `residual` the
/// error-feedback buffer (AllReduceExtras), or null.
Status CheckLocal(const void* send, const void* recv, size_t count, DType dtype,
                  const AllReduceOptions& o, size_t microshards, const float* residual = nullptr);

Descriptor Describe(size_t count, DType dtype, const AllReduceOptions& o, size_t microshards,
                    uint64_t tune_hash, const Status& local);

/// Sends `mine` to every rank and receives theirs; returns the first rank's local error, a
/// mismatch, or a transport failure — the same verdict on every rank.
Status Agree(transport::Transport* t, const Descriptor& mine, uint64_t tag,
             transport::Deadline deadline, Descriptor* all /* [size] */,
             transport::Request* reqs /* [2 * size] */);

}  // namespace equarx::core
