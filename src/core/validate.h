// equarx call validation: local argument checks plus the descriptor exchange that makes an
// invalid or mismatched call fail on every rank instead of hanging the others.
#pragma once

#include <cstddef>
#include <cstdint>

#include "equarx/options.h"
#include "equarx/status.h"
#include "transport/transport.h"

namespace equarx::core {

/// Most option fields the descriptor can carry (room to grow; the option table's size is checked
/// against it when the table is built, src/core/options.cc).
inline constexpr size_t kMaxDescribedFields = 24;

/// What a rank says about its call before any data moves. Trivially copyable, fixed size.
/// `fields` holds every option of the table (options.h) in table order, as resolved for the
/// call (environment applied), so that ranks whose environments differ are caught too.
struct Descriptor {
  uint32_t magic;
  uint32_t version;
  uint64_t count;
  uint8_t dtype;
  uint8_t unsafe_for_rotation;  // whether this rank's input holds a value the rotation must not
                                // see: 0 no, 1 yes, 2 not checked (communicator.cc)
  uint8_t pad[6];
  uint64_t tune_hash;   // hash of auto's table when the call uses auto (UsesAuto), else 0
  uint64_t fields[kMaxDescribedFields];
  uint32_t error_code;  // StatusCode of the local check, 0 if fine
  char error[116];      // its message, truncated
};

/// Whether a call resolves `auto` through a table: algorithm auto, or hierarchical with inner
/// auto.
bool UsesAuto(const AllReduceOptions& o);

/// Checks this rank's arguments only. `o` holds the resolved options (microshards >= 1);
/// `residual` is the error-feedback buffer (AllReduceExtras), or null.
Status CheckLocal(const void* send, const void* recv, size_t count, DType dtype,
                  const AllReduceOptions& o, const float* residual = nullptr);

Descriptor Describe(size_t count, DType dtype, const AllReduceOptions& o, uint64_t tune_hash,
                    uint8_t unsafe_for_rotation, const Status& local);

/// Sends `mine` to every rank and receives theirs; returns the first rank's local error, a
/// mismatch, or a transport failure — the same verdict on every rank.
Status Agree(transport::Transport* t, const Descriptor& mine, uint64_t tag,
             transport::Deadline deadline, Descriptor* all /* [size] */,
             transport::Request* reqs /* [2 * size] */);

}  // namespace equarx::core
