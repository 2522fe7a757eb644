// equarx environment knobs: every EQUARX_* variable is one row of EQUARX_ENV_KNOBS below, and
// that row is all there is of it. Its default initializes the Settings field, its range and
// type drive Read() (parsing, range checks, the warnings), its texts are what equarx-info and
// docs/configuration.md show, and an AllReduceOptions row that names the knob (core/options.cc,
// EQUARX_KNOB_ROW) takes the knob's range for its own (0 = unset) and its default for its doc;
// algo::ResolveDefaults fills such an option from the knob when the call leaves it unset.
// Adding a knob is one row here; adding an option with a knob adds its field
// (include/equarx/options.h) and its row (src/core/options.cc) as any option does.
//
// Precedence everywhere: an explicit option > the environment variable > the default. The
// environment is read once, when a communicator is created, never per call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "equarx/options.h"
#include "equarx/types.h"

namespace equarx::env {

/// The cap of EQUARX_THREADS's computed default (core/communicator.cc divides the cores).
inline constexpr uint32_t kDefaultThreadsAtMost = 8;

// One row per knob: X(field, Type, name, default, lo, hi, type_text, default_text, doc)
//   field, Type   the Settings member that holds the value, and its type: uint32_t (an integer
//                 in [lo, hi]), double (a number in [lo, hi]), std::string (any non-empty
//                 text), std::optional<Rotation> (the values of type_text);
//   default       the member's value when the variable is unset, empty or refused;
//   type_text     how equarx-info names the type ("uint", "path", "none|hadamard", ...);
//   default_text  the default as the tables show it, "" for the default itself (a number, a
//                 word); computed defaults and empty ones name what applies instead;
//   doc           one line; "{range}" becomes "lo..hi".
// An option row can take its value from uint32_t and std::optional<Rotation> knobs.
#define EQUARX_ENV_KNOBS(X)                                                                      \
  X(timeout_ms, uint32_t, "EQUARX_TIMEOUT_MS", 300000, 1, 86400000, "uint", "",                  \
    "deadline of one collective call in milliseconds when the call's options give none")        \
  X(microshards, uint32_t, "EQUARX_MICROSHARDS", 0, 1, kMaxMicroshards, "uint",                 \
    "(by size: one per " + std::to_string(kMicroshardElements >> 10) + " Ki elements of a "     \
    "shard, at most " + std::to_string(kDefaultMicroshards) + ")",                              \
    "microshards per shard ({range}) when the call's options give none; by default one per " +  \
    std::to_string(kMicroshardElements >> 10) + " Ki elements of the call's largest shard, 1 "  \
    "to " + std::to_string(kDefaultMicroshards))                                                \
  X(ranks_per_host, uint32_t, "EQUARX_RANKS_PER_HOST", 0, 1, 2047, "uint",                      \
    "(the hosts the data path finds, else 1)",                                                   \
    "ranks per host, in rank order ({range}), for algorithm hierarchical and auto's choice "     \
    "of it, when the call's options give none; by default the layout that the data path "       \
    "finds (R consecutive ranks per host; every rank on one host: all of them)")                \
  X(threads, uint32_t, "EQUARX_THREADS", 0, 1, kMaxThreads, "uint",                              \
    "(cores / ranks on this host, at most " + std::to_string(kDefaultThreadsAtMost) + ")",      \
    "codec threads of each rank ({range}) when the call's options give none; the default "     \
    "divides this process's cores by the ranks that share them")                                \
  X(tune_file, std::string, "EQUARX_TUNE_FILE", "", 0, 0, "path", "(none)",                      \
    "crossover table for algorithm=auto, written by equarx-tune (none: auto asks the cost "      \
    "model, on the network of EQUARX_LINK_GBIT, EQUARX_STEP_US and EQUARX_MESSAGE_US)")         \
  X(link_gbit, double, "EQUARX_LINK_GBIT", 1, 0.001, 100000, "number", "",                       \
    "algorithm=auto without a tune file: each host's link in Gbit/s per direction, as the "      \
    "cost model assumes it ({range}); every rank must give the same")                           \
  X(step_us, double, "EQUARX_STEP_US", 2, 0, 1000000, "number", "",                             \
    "algorithm=auto without a tune file: the latency of one schedule step between hosts in "    \
    "microseconds ({range}), as the cost model assumes it")                                     \
  X(message_us, double, "EQUARX_MESSAGE_US", 14, 0, 1000000, "number", "",                      \
    "algorithm=auto without a tune file: the time each message a rank sends to another host "   \
    "costs in microseconds (the network stack and the wake-ups; {range}), as the cost model "   \
    "assumes it")                                                                               \
  X(data_path, std::string, "EQUARX_DATA_PATH", "host", 0, 0, "host|sockets|shm|mpi", "",        \
    "how a communicator across processes moves data: host (equarx's shared-memory rings to "    \
    "the ranks of this host, its own TCP connections to the others; a dead or stopped peer "     \
    "fails every survivor's call within its deadline), sockets (TCP only), shm (rings only: "   \
    "every rank on one host), or MPI point-to-point")                                           \
  X(rotation, std::optional<Rotation>, "EQUARX_ROTATION", std::nullopt, 0, 0, "none|hadamard",   \
    "(the codec's default)",                                                                     \
    "rotation of calls whose options leave it at default (quantized plans only): none, or "     \
    "hadamard (randomized Walsh-Hadamard per block before quantizing)")                         \
  X(spin_us, uint32_t, "EQUARX_SPIN_US", 50, 0, 100000, "uint", "",                              \
    "microseconds a rank that waits for a message polls for it before it sleeps ({range}): "     \
    "a small call's messages arrive within microseconds, and waking a sleeping rank costs "     \
    "more than that")                                                                            \
  X(socket_ifname, std::string, "EQUARX_SOCKET_IFNAME", "", 0, 0, "name",                        \
    "(first non-loopback)",                                                                      \
    "network interface whose IPv4 address other hosts use to reach this rank (data path "      \
    "sockets)")                                                                                  \
  X(encrypt, uint32_t, "EQUARX_ENCRYPT", 0, 0, 1, "0|1", "",                                     \
    "1: encrypt and authenticate everything equarx's TCP connections carry after their "       \
    "handshake (data paths sockets and host; AES-256-GCM under keys of each connection, "      \
    "docs/security.md); every rank must give the same")

/// Values of the knobs as read now (out-of-range or malformed values fall back to the default
/// and are reported in `warnings`). Default-constructed: every default.
struct Settings {
#define EQUARX_KNOB_FIELD(field, Type, name, def, ...) Type field = def;
  EQUARX_ENV_KNOBS(EQUARX_KNOB_FIELD)
#undef EQUARX_KNOB_FIELD
  std::vector<std::string> warnings;
};
Settings Read();

/// The knobs' names, for code that names one (an option row): env::knob::timeout_ms is
/// "EQUARX_TIMEOUT_MS".
namespace knob {
#define EQUARX_KNOB_NAME(field, Type, name, ...) inline constexpr std::string_view field = name;
EQUARX_ENV_KNOBS(EQUARX_KNOB_NAME)
#undef EQUARX_KNOB_NAME
}  // namespace knob

/// One row of the table as data.
struct Knob {
  const char* name;           ///< e.g. "EQUARX_TIMEOUT_MS"
  std::string type;           ///< "uint", "path", ...
  std::string default_value;  ///< as text
  std::string doc;
  double lo = 0, hi = 0;      ///< the range of uint and number knobs
  /// Reads the variable into its Settings field (a refused value: a warning, the field kept).
  void (*read)(const Knob&, Settings*);
  /// The field's value as an option row's value (set_option), if the knob gives one: always
  /// for uint knobs, once set for the rotation, never for numbers and text.
  std::optional<uint64_t> (*option_value)(const Settings&);
};

/// The whole table in row order (for Read(), equarx-info and docs/configuration.md).
const std::vector<Knob>& Knobs();
/// The row named `name`, or null.
const Knob* FindKnob(std::string_view name);

}  // namespace equarx::env
