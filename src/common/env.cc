// equarx environment knobs (see env.h).
#include "common/env.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace equarx::env {

const std::vector<Knob>& Knobs() {
  static const std::vector<Knob> kKnobs = {
      {"EQUARX_TIMEOUT_MS", "uint", "300000",
       "deadline of one collective call in milliseconds when the call's options give none"},
      {"EQUARX_MICROSHARDS", "uint", "4",
       "microshards per shard (1..64) when the call's options give none"},
      {"EQUARX_RANKS_PER_HOST", "uint", "(the hosts the data path finds, else 1)",
       "ranks per host, in rank order (1..2047), for algorithm hierarchical and auto's choice "
       "of it, when the call's options give none; by default the layout that the data path "
       "finds (R consecutive ranks per host; every rank on one host: all of them)"},
      {"EQUARX_THREADS", "uint", "(cores / ranks on this host)",
       "codec threads of each rank (1..64) when the call's options give none; the default "
       "divides this process's cores by the ranks that share them, at most 8"},
      {"EQUARX_TUNE_FILE", "path", "(none)",
       "crossover table for algorithm=auto, written by equarx-tune (none: auto asks the cost "
       "model, on the network of EQUARX_LINK_GBIT and EQUARX_STEP_US)"},
      {"EQUARX_LINK_GBIT", "number", "1",
       "algorithm=auto without a tune file: each host's link in Gbit/s per direction, as the "
       "cost model assumes it (0.001..100000); every rank must give the same"},
      {"EQUARX_STEP_US", "number", "50",
       "algorithm=auto without a tune file: the time of one schedule step in microseconds "
       "(latency and per-message cost; 0..1000000), as the cost model assumes it"},
      {"EQUARX_DATA_PATH", "host|sockets|shm|mpi", "host",
       "how a communicator across processes moves data: host (equarx's shared-memory rings to "
       "the ranks of this host, its own TCP connections to the others; a dead or stopped peer "
       "fails every survivor's call within its deadline), sockets (TCP only), shm (rings only: "
       "every rank on one host), or MPI point-to-point"},
      {"EQUARX_ROTATION", "none|hadamard", "(the codec's default)",
       "rotation of calls whose options leave it at default (quantized plans only): none, or "
       "hadamard (randomized Walsh-Hadamard per block before quantizing)"},
      {"EQUARX_SPIN_US", "uint", "50",
       "microseconds a rank that waits for a message polls for it before it sleeps (0..100000): "
       "a small call's messages arrive within microseconds, and waking a sleeping rank costs "
       "more than that"},
      {"EQUARX_SOCKET_IFNAME", "name", "(first non-loopback)",
       "network interface whose IPv4 address other hosts use to reach this rank (data path "
       "sockets)"},
  };
  return kKnobs;
}

namespace {

// Reads knob `name` into *out when set: `parse` (strtoull or strtod) must take all of it, and
// the value must lie in [lo, hi]; otherwise it is ignored, with a warning naming `what`.
template <typename T, typename Parse>
bool ParseKnob(const char* name, T lo, T hi, const char* what, Parse parse, T* out,
               std::vector<std::string>* warnings) {
  const char* v = std::getenv(name);
  if (!v || !*v) return false;
  errno = 0;
  char* end = nullptr;
  const auto x = parse(v, &end);
  if (errno || *end || !(x >= lo && x <= hi)) {  // a NaN fails the range test too
    char range[64];  // %g: 0.001 and 100000, not std::to_string's 0.001000 and 100000.000000
    std::snprintf(range, sizeof range, "[%.10g, %.10g]", double(lo), double(hi));
    warnings->push_back(std::string(name) + "='" + v + "' ignored: expected " + what + " in " + range);
    return false;
  }
  *out = T(x);
  return true;
}

bool ParseUint(const char* name, uint32_t lo, uint32_t hi, uint32_t* out,
               std::vector<std::string>* warnings) {
  return ParseKnob(name, lo, hi, "an integer",
                   [](const char* v, char** end) { return std::strtoull(v, end, 10); }, out, warnings);
}

bool ParseNumber(const char* name, double lo, double hi, double* out,
                 std::vector<std::string>* warnings) {
  return ParseKnob(name, lo, hi, "a number", [](const char* v, char** end) { return std::strtod(v, end); },
                   out, warnings);
}

}  // namespace

Settings Read() {
  Settings s;
  ParseUint("EQUARX_TIMEOUT_MS", 1, 86400000, &s.timeout_ms, &s.warnings);
  ParseUint("EQUARX_MICROSHARDS", 1, 64, &s.microshards, &s.warnings);
  ParseUint("EQUARX_RANKS_PER_HOST", 1, 2047, &s.ranks_per_host, &s.warnings);
  ParseUint("EQUARX_THREADS", 1, 64, &s.threads, &s.warnings);
  ParseUint("EQUARX_SPIN_US", 0, 100000, &s.spin_us, &s.warnings);
  ParseNumber("EQUARX_LINK_GBIT", 0.001, 100000, &s.link_gbit, &s.warnings);
  ParseNumber("EQUARX_STEP_US", 0, 1000000, &s.step_us, &s.warnings);
  if (const char* v = std::getenv("EQUARX_TUNE_FILE")) s.tune_file = v;
  if (const char* v = std::getenv("EQUARX_DATA_PATH"); v && *v) s.data_path = v;
  if (const char* v = std::getenv("EQUARX_SOCKET_IFNAME")) s.socket_ifname = v;
  if (const char* v = std::getenv("EQUARX_ROTATION"); v && *v) {
    const auto r = ParseRotation(v);
    if (r && *r != Rotation::kDefault) s.rotation = *r;
    else s.warnings.push_back(std::string("EQUARX_ROTATION='") + v + "' ignored: expected none or hadamard");
  }
  return s;
}

}  // namespace equarx::env
