// equarx cost model — predicts the time of one AllReduce from the plan the library would run,
// the network and the codec's measured speed. No communication; the library's own plan and
// byte count (plan.h) are the input, so the model's bytes are the bytes the library sends.
//
// Network: H hosts of R ranks each on a switched, full-duplex network; every host has one
// link of `link_bytes_per_s` per direction (its NIC) and ranks are placed on hosts in rank
// order (rank r on host r / R). Inside a host, ranks exchange through memory at
// `shm_bytes_per_s` per rank.
//
// Time of a flat plan over N = H * R ranks (every term from the plan):
//   check   = with validate, the argument check first. N a power of two, R < N: log2 N steps of
//             one frame (kCheckFrameBytes) to one partner each; recursive_doubling's data rides
//             in them (no step or message of their own), and one_shot's data to each step's
//             partner leaves with that step's frame (log2 N - 1 more steps, no more messages).
//             Otherwise one all-to-all step in which every rank sends its descriptor
//             (check_bytes) to every other, and one_shot's data rides in it.
//   recursive_doubling: log2 N steps of one message of the whole f32 tensor (two more with
//             N not a power of two), one f32 add per step.
//   steps   = RS steps + AG steps: a lane of T steps takes T; lanes run side by side, so a
//             phase takes its longest lane; two_shot's all-to-all is one step per phase
//             with N - 1 messages. Every message goes in the executor's microshards
//             (PlanMicroshards).
//             latency = steps * alpha + messages * per_message.
//   network = host egress bytes / link: a ring-shaped plan crosses each host boundary on one
//             edge per direction, so a host sends what one rank sends (W, exact from
//             PlanWireBytes); two_shot's host sends R * W * (N - R) / (N - 1).
//   memory  = a rank's intra-host bytes / shm (the ring's other R - 1 edges; two_shot's
//             R - 1 same-host peers); the copies are a core's loads and stores, so where the
//             host's cores are fewer than its ranks each rank gets cores / R of that rate.
//   codec   = per rank: the quantized RS decode-accumulate-encodes (N-1)/N of the tensor, the
//             quantized AG decodes it, an unquantized RS hop widens-adds-narrows it; plus
//             the rotation's forward and inverse over the whole tensor when one applies.
//             Each at the measured rate of one thread, times the threads the host's cores
//             give a rank (cores / R, at most `threads`).
//   stack   = the network stack's CPU time for the bytes the host sends and receives over
//             its link (stack_s_per_byte), on the host's cores; cpu = codec + stack.
//   total   = latency + max(network, memory, cpu) + min(network, cpu) / microshards
//             (the executor pipelines each step in microshards: the slower resource sets the
//             pace, one microshard of the other is exposed at the end). A link with a burst
//             allowance (a token bucket) sends its first link_burst_bytes at once: network
//             counts only the bytes past it, and the total is at least host egress / rate.
//
// Hierarchical (algo/hierarchical.cc; options.algorithm = kHierarchical, or PredictHierarchical
// with the inner options): an unquantized reduce-scatter inside each host over memory (the
// contributions in the dtype, summed in f32; one step, R - 1 messages), the inner flat plan of
// each 1/R shard across the H hosts (R of them share the host's link and cores), an all-gather
// inside the host in the dtype. The schedule pipelines them over C chunks of the shard (one
// inner call per chunk, HierarchicalChunks): total = intra / C + max(inter, intra (C - 1) / C),
// inter the C inner calls one after the other, intra the two memory passes and the f32 adds.
// The layout is the machine's (ranks_per_host), one argument check over all N ranks. Bytes are
// rank 0's, exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "algo/plan.h"
#include "algo/tune_table.h"
#include "common/env.h"
#include "equarx/options.h"

namespace equarx::algo {

/// Element throughput of one thread for each kernel the model charges (elements per second).
struct KernelRates {
  double dae = 3.0e9;      ///< quantized decode-accumulate-encode (the RS hop)
  double decode = 6.0e9;   ///< quantized decode (the AG)
  double add = 4.0e9;      ///< unquantized RS hop: widen, add in f32, narrow
  double rotate = 1.5e9;   ///< one Hadamard rotation pass (forward or inverse)
};

struct Machine {
  int hosts = 2;
  int ranks_per_host = 1;
  double link_bytes_per_s = 125e6;  ///< per host, per direction
  double alpha_s = 50e-6;           ///< per step (a network round of the schedule)
  double per_message_s = 0.0;       ///< added per message a rank sends (microshards included)
  /// CPU time the operating system's network stack spends per byte a host sends or receives
  /// (TCP without offloads costs a core about 1 ns per byte), taken from the host's cores
  /// like the codec's work; 0 to leave it out.
  double stack_s_per_byte = 0;
  /// What the link lets through at once before its rate applies (a token bucket's burst, as
  /// the emulated links of bench/netem have: 2 ms of line rate); 0 for a plain link.
  uint64_t link_burst_bytes = 0;
  double shm_bytes_per_s = 8e9;     ///< intra-host, per rank
  double cores_per_host = 0;        ///< 0: ranks_per_host * threads (no contention)
  int threads = 1;                  ///< codec threads per rank
  /// Bytes of the argument check every rank sends every other before the data (validate=1;
  /// the caller knows the descriptor's size, core/validate.h); one more all-to-all step.
  size_t check_bytes = 0;
  KernelRates rates;
  /// The environment a call's defaults come from (resolve.h, ResolveDefaults); null: the
  /// built-in defaults.
  const env::Settings* env = nullptr;
};

struct Prediction {
  Algorithm algorithm = Algorithm::kRing;  ///< what the plan resolved to
  int steps = 0;
  uint64_t messages = 0;              ///< what one rank sends, microshards included
  uint64_t wire_bytes_per_rank = 0;   ///< exact, from the plan
  uint64_t host_egress_bytes = 0;     ///< what one host's NIC sends
  uint64_t intra_host_bytes = 0;      ///< what one rank sends to same-host ranks
  double latency_s = 0, network_s = 0, memory_s = 0, codec_s = 0, stack_s = 0;
  double paced_s = 0;  ///< network time past the link's burst
  double work_s = 0;  ///< the pipelined resources' time after the burst (total minus latency)
  double seconds = 0;
};

/// The prediction for a flat AllReduce of `count` elements over all ranks of `m`. `options` as
/// a caller passes them: the call is resolved as the library resolves it (resolve.h; defaults
/// from m.env), auto through `table`. A call the library refuses predicts 0 s.
Prediction PredictFlat(const AllReduceOptions& options, DType dtype, size_t count,
                       const Machine& m, const TuneTable& table);

/// The hierarchical schedule described above, with `inner` as the inter-host plan's options.
/// ranks_per_host == 1 gives the flat plan over the hosts.
Prediction PredictHierarchical(const AllReduceOptions& inner, DType dtype, size_t count,
                               const Machine& m, const TuneTable& table);

/// The threads a rank's codec gets on `m` (may be fractional when ranks share cores).
double EffectiveThreads(const Machine& m);

// `auto` without a tune table asks this model. For each power of two from 16 B to 16 GiB it
// predicts every algorithm the registry lets auto choose (algorithms.inc) with the call's
// codec, block, scale, rotation and other options, each as auto would run it, and keeps the
// fastest (of equal times, the one with fewer steps); a quantized candidate must beat the
// fastest unquantized one by 5% (as equarx-tune's default margin), so a near tie stays exact.
// The machine: the network below; ranks_per_host from the options (the ranks in rank order
// on ranks / ranks_per_host hosts; 1 when it does not divide them; every rank on one host when
// it equals the ranks: no link, and a step of kLocalStepUs); one codec thread at the built-in
// KernelRates; the argument check's bytes. Every input is the same on every rank, so every rank
// builds the same table, and the descriptor exchange compares its hash like a tune file's.

/// Bytes of the argument check's descriptor that every rank sends every other when validate is
/// on (core/validate.h, whose static_assert holds the two equal).
inline constexpr size_t kCheckBytes = 352;
/// Bytes of each frame of the argument check of a power-of-two group (core/validate.h,
/// CheckFrame): one per step, to that step's partner.
inline constexpr size_t kCheckFrameBytes = 32;

/// The time of one schedule step between ranks of one host (shared memory or threads: a
/// message's wake-up and copy; docs/performance.md, "Small calls"), in microseconds.
inline constexpr double kLocalStepUs = 3;

/// The network the model assumes (env.h: EQUARX_LINK_GBIT, EQUARX_STEP_US, EQUARX_MESSAGE_US,
/// whose rows hold the defaults), and what else of the environment a call's resolution reads.
struct AutoNetwork {
  double link_gbit = 0;   ///< each host's link, Gbit/s per direction
  double step_us = 0;     ///< latency of one schedule step between hosts
  double message_us = 0;  ///< cost of each message a rank sends to another host
  std::optional<Rotation> rotation;  ///< EQUARX_ROTATION: what a default rotation resolves to
};

/// The options ModelTuneTable reads (the others at their defaults): two calls whose inputs are
/// equal get the same table, so this is the key a caller caches tables by.
AllReduceOptions ModelTableInputs(const AllReduceOptions& options);

/// The crossover table described above for calls of `options` (resolved, but with the rotation
/// as the caller asked for it: default, none or hadamard) and `dtype` on `ranks` ranks: a
/// section for (ranks, dtype), and with algorithm hierarchical and ranks_per_host R > 1 one
/// for its inner plans (ranks / R hosts, each of the R shard groups with 1/R of the link, as
/// PredictHierarchical charges them). Other (ranks, dtype) fall back to the built-in rules.
TuneTable ModelTuneTable(const AllReduceOptions& options, DType dtype, int ranks,
                         const AutoNetwork& network);

}  // namespace equarx::algo
