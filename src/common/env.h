// equarx environment knobs: every EQUARX_* variable is declared once, in the table in env.cc.
//
// Precedence everywhere: an explicit option > the environment variable > the default. The
// environment is read once, when a communicator is created, never per call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "equarx/types.h"

namespace equarx::env {

struct Knob {
  const char* name;           ///< e.g. "EQUARX_TIMEOUT_MS"
  const char* type;           ///< "uint", "path", ...
  const char* default_value;  ///< as text
  const char* doc;
};

/// The whole table (for equarx-info and docs/configuration.md).
const std::vector<Knob>& Knobs();

/// Values of the knobs as read now (out-of-range or malformed values fall back to the default
/// and are reported in `warnings`).
struct Settings {
  uint32_t timeout_ms = 300000;
  uint32_t microshards = 4;
  std::string tune_file;  // empty: auto asks the cost model
  std::string data_path = "host";  // as given; CreateMpiCommunicator checks it
  std::string socket_ifname;      // empty: first non-loopback interface
  std::optional<Rotation> rotation;  // EQUARX_ROTATION, if set to none or hadamard
  uint32_t ranks_per_host = 0;       // EQUARX_RANKS_PER_HOST (0: unset; the transport's hosts)
  uint32_t threads = 0;              // EQUARX_THREADS (0: from the cores and the local ranks)
  uint32_t spin_us = 50;             // EQUARX_SPIN_US (poll before sleeping in a wait)
  double link_gbit = 1;              // EQUARX_LINK_GBIT (auto's cost model without a tune file)
  double step_us = 50;               // EQUARX_STEP_US (auto's cost model without a tune file)
  std::vector<std::string> warnings;
};
Settings Read();

}  // namespace equarx::env
