// mpi_soak's calls: what each call draws (options, size, data) from (seed, call index), the
// inputs every rank can rebuild for any rank, and the checker of a call's output against the
// exact sum (soak.cc runs them; its top comment describes the whole program).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "equarx/options.h"
#include "equarx/types.h"
#include "random.h"

namespace equarx::soak {

struct Settings {
  uint64_t calls = 20000, seed = 1, warmup = 1000, report_every = 500;
  uint64_t start = 0;  // index of the first random call (> 0: reproduce from there, no phase 1)
  size_t max_bytes = size_t(64) << 20, check_elems = size_t(1) << 16;
  std::string out;
  std::string command;
};

// One call's draw (identical on every rank).
struct Draw {
  DType dtype = DType::kFloat32;
  size_t count = 1;
  AllReduceOptions o;
  bool in_place = false;
  tools::GenSpec gen;  // stream = rank at generation
  int scale_exp = 0;   // inputs scaled by 2^scale_exp before rounding to the dtype
};

/// The draw of call `call` (identical on every rank: a function of the seed and the index).
Draw DrawCall(const Settings& s, uint64_t call, int ranks);
/// What reproduces the call, for the failure lines.
std::string Describe(const Draw& d, uint64_t call);
/// This process's resident set in KiB (/proc/self/statm).
size_t ResidentKib();

// Inputs. Generating every element (tools::Generate: Box-Muller per value) would cost more than
// the calls themselves, so each rank's input is built from a base of kBase generated values
// (its distribution, scaled, rounded to the dtype), seen as rows of `cols` elements (the
// heavy-tailed data's channels): the first rows of the input are the base itself; every later
// row is a copy of one of the base's rows, chosen by a hash of (data seed, rank, row). So any
// segment of any rank's input is cheap to rebuild, and every rank builds every rank's.
constexpr size_t kBase = 16384;

struct Bases {
  std::vector<std::vector<float>> f;       // [rank][kBase]: the values
  std::vector<std::vector<uint16_t>> h;    // [rank][kBase]: bf16 / f16 encodings
  explicit Bases(int n) : f(size_t(n), std::vector<float>(kBase)), h(size_t(n), std::vector<uint16_t>(kBase)) {}

  void Build(const Draw& d);  // every rank's base for this draw

  // Rank r's elements [off, off + n): as f32 values into `out` (if not null) and in the dtype
  // into `wire` (if not null).
  void Input(const Draw& d, int r, size_t off, size_t n, float* out, uint8_t* wire) const;
};

// Fixed-size scratch of the checker (allocated once).
struct Checker {
  static constexpr size_t kUnit = 16384;  // elements per check unit, rounded up to whole blocks
  int ranks = 0;
  std::vector<std::vector<float>> x;
  std::vector<const float*> xp;
  std::vector<double> exact;
  std::vector<float> got;

  explicit Checker(int n) : ranks(n), x(size_t(n)), exact(kUnit + kMaxBlock), got(kUnit + kMaxBlock) {
    for (auto& v : x) {
      v.assign(kUnit + kMaxBlock, 0.0f);
      xp.push_back(v.data());
    }
  }

  // Elements of this rank's share of the output outside the bound; *checked: elements looked at.
  uint64_t Check(const Draw& d, const Bases& in, const AllReduceOptions& ob, const uint8_t* out, int me,
                 size_t budget, uint64_t call_key, uint64_t* checked);
};

}  // namespace equarx::soak
