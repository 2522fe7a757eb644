// equarx call validation: local argument checks plus the descriptor exchange that makes an
// invalid or mismatched call fail on every rank instead of hanging the others.
#pragma once

#include <cstddef>
#include <cstdint>

#include <vector>

#include "algo/one_shot.h"
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

/// What a rank says in each step of the call check of a group of 2^K ranks (CheckTree), for
/// the ranks it has heard from so far (its group). Trivially copyable, fixed size.
struct CheckFrame {
  uint64_t lo, hi;          ///< least and greatest CallHash of the group
  uint64_t data_bytes;      ///< bytes of the recursive_doubling message sent beside it (0: none)
  uint32_t error;           ///< 1: a rank of the group failed its local check
  uint8_t rotation_inputs;  ///< InputBit of every rank's Descriptor::rotation_input
  uint8_t pad[3];
};

/// Hash of what every rank must agree on: the descriptor without its rotation input, the bytes
/// it sent ahead and its local error (the frame carries those).
uint64_t CallHash(const Descriptor& d);

/// The call check of a group of N = 2^K ranks, in K steps: in step k every rank trades a frame
/// with rank ^ 2^k and merges it into its own (least and greatest hash, error, rotation
/// inputs). After step k the 2^(k+1) ranks of each aligned group hold the same frame, so after
/// K steps every rank holds the whole group's, whatever plan each resolved: the ranks agree
/// when the least hash is the greatest and no rank failed. When they do not, every rank learns
/// it in the same step and runs the descriptor exchange (Exchange), whose verdict is the message
/// of the call's refusal.
///
/// A recursive_doubling call (algo/recursive_doubling.cc) has the same pairs: its step k rides
/// beside frame k (corked, one message), while the ranks still agree. A one_shot call sends its
/// contribution to each step's partner beside that step's frame. A rank sends its partial
/// sum only while its group agrees with its own call (and says so in data_bytes); it adds the
/// partner's only when the partner's group agrees too. Whatever a partner sent that is not
/// added is received and dropped in the same step, so a refused call leaves nothing behind.
class CheckTree {
 public:
  /// Runs the K steps of the call with tags from `tag_base` (CheckFrameTag). `call`: a started
  /// one_shot call (null: none): recursive_doubling rides in the steps; any other one_shot call
  /// sends its contribution to its step-k partner (k >= 1) beside frame k, so that the check
  /// adds no message of its own (Start left those out). A transport failure is returned;
  /// otherwise OK, and agreed() says the verdict.
  Status Run(transport::Transport* t, const Descriptor& mine, uint64_t tag_base, transport::Deadline deadline,
             algo::OneShotCall* call);
  /// Whether every rank makes the same call and none failed its local check.
  bool agreed() const { return agreed_; }
  /// InputBit of every rank's rotation input (rotation_guard.h, Settle).
  uint8_t rotation_inputs() const { return frame_.rotation_inputs; }
  /// Whether the recursive_doubling call ran every step with every partial sum added.
  bool rd_done() const { return rd_done_; }

 private:
  CheckFrame frame_{}, in_{}, out_{};
  transport::Request reqs_[2];
  std::vector<uint8_t> sink_;  // a partial sum received and dropped (a refused call only)
  bool agreed_ = false, rd_done_ = false;
};

/// The tag of step k's frame.
inline uint64_t CheckFrameTag(uint64_t tag_base, int k) { return tag_base | (0xFFFFFFF0ull - uint64_t(k)); }

/// Bytes each of n ranks on hosts of `ranks_per_host` sends for the check of a call the ranks
/// agree on: log2 n frames, or n - 1 descriptors.
inline uint64_t CheckBytesPerRank(int n, int ranks_per_host) {
  if (!algo::ChecksByTree(n, ranks_per_host)) return n < 2 ? 0 : uint64_t(n - 1) * sizeof(Descriptor);
  return uint64_t(algo::Log2(n)) * sizeof(CheckFrame);
}

}  // namespace equarx::core
