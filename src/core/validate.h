// equarx call validation: local argument checks plus the descriptor exchange that makes an
// invalid or mismatched call fail on every rank instead of hanging the others.
#pragma once

#include <cstddef>
#include <cstdint>

#include <vector>

#include "core/rotation_guard.h"
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
  RotationInput rotation_input;  // what this rank knows of its input (rotation_guard.h)
  uint8_t pad[6];
  uint64_t tune_hash;   // hash of auto's table when the call uses auto, else 0
  // Bytes of the message this rank sent each peer before the exchange finished (one_shot
  // starts beside it; 0: none): what a peer must receive and drop when the call is refused.
  uint64_t sent_ahead;
  uint64_t fields[kMaxDescribedFields];
  uint32_t error_code;  // StatusCode of the local check, 0 if fine
  char error[116];      // its message, truncated
};

/// Checks this rank's arguments only. `o` holds the resolved options (microshards >= 1);
/// `residual` is the error-feedback buffer (AllReduceExtras), or null.
Status CheckLocal(const void* send, const void* recv, size_t count, DType dtype,
                  const AllReduceOptions& o, const float* residual = nullptr);

/// `tune_hash`: the hash of auto's table when the call uses auto, else 0.
Descriptor Describe(size_t count, DType dtype, const AllReduceOptions& o, uint64_t tune_hash,
                    RotationInput rotation_input, uint64_t sent_ahead, const Status& local);

/// One descriptor exchange, in two halves so that data can move beside it: every rank sends
/// its descriptor to every other and receives theirs. The verdict is the first rank's local
/// error, a mismatch, or a transport failure: the same on every rank. Its buffers are made
/// once, for the group's size.
class Exchange {
 public:
  explicit Exchange(int ranks) : all_(size_t(ranks)), reqs_(2 * size_t(ranks)) {}
  /// Posts every receive and sends `mine`.
  Status Start(transport::Transport* t, const Descriptor& mine, uint64_t tag, transport::Deadline deadline);
  /// Waits for every descriptor and send (cancelling what is left on a failure); the verdict.
  Status Finish();
  /// Start, then Finish.
  Status Agree(transport::Transport* t, const Descriptor& mine, uint64_t tag, transport::Deadline deadline) {
    EQUARX_RETURN_IF_ERROR(Start(t, mine, tag, deadline));
    return Finish();
  }
  /// Whether Finish received every descriptor (its verdict then comes from them; otherwise
  /// the transport failed and all() is undefined).
  bool received() const { return received_; }
  /// Every rank's descriptor, after Finish.
  const std::vector<Descriptor>& all() const { return all_; }

 private:
  std::vector<Descriptor> all_;
  std::vector<transport::Request> reqs_;
  transport::Transport* t_ = nullptr;
  transport::Deadline deadline_;
  int posted_ = 0;
  bool received_ = false;
  Status start_;
};

}  // namespace equarx::core
