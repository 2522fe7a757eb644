// equarx-accuracy, section 6 — real activations: the AllReduce operands of a real model as
// written by `equarx-gemma3 eval --dump-activations DIR` (one f32 .npy per rank and call,
// PREFIX_rank<r>.npy), next to Table I's Gaussian data.
//
// For every group of files (same PREFIX, ranks 0..N-1, same shape) each configuration runs on
// an N-rank in-process group with the files as the ranks' inputs (f32, as the model hands them
// over); the bf16 ring row casts them to bf16 first (what a bf16 model puts on the wire).
// Errors are against the exact f64 sum and pooled over all groups of a kind (attention output,
// MLP output): relative RMS = sqrt(sum err^2 / sum exact^2). `MSE / bf16 ring` is the ratio of
// pooled squared errors to the bf16 ring's: the number the model-level KL follows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accuracy.h"
#include "group.h"
#include "half.h"
#include "npy.h"

namespace equarx::tools {
namespace {

struct Group {
  std::string prefix;   // DIR/chunk0_L3_attn
  std::string kind;     // "attn" or "mlp"
  std::vector<std::string> paths;  // by rank
};

// Groups DIR's PREFIX_rank<r>.npy files by PREFIX; a group needs ranks 0..N-1 and N >= 2.
std::vector<Group> FindGroups(const std::string& dir, std::string* error) {
  std::map<std::string, std::map<int, std::string>> by_prefix;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.rfind("_rank");
    if (at == std::string::npos || name.size() < 4 || name.substr(name.size() - 4) != ".npy") continue;
    const std::string digits = name.substr(at + 5, name.size() - 4 - at - 5);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string prefix = e.path().parent_path().string();
    prefix.append("/").append(name, 0, at);
    by_prefix[prefix][std::stoi(digits)] = e.path().string();
  }
  if (ec) {
    *error = "cannot read activation directory " + dir + ": " + ec.message();
    return {};
  }
  std::vector<Group> out;
  for (auto& [prefix, ranks] : by_prefix) {
    Group g;
    g.prefix = prefix;
    g.kind = prefix.size() >= 4 && prefix.substr(prefix.size() - 4) == "_mlp" ? "mlp" : "attn";
    for (int r = 0; r < int(ranks.size()); ++r) {
      if (!ranks.count(r)) {
        *error = prefix + ": rank " + std::to_string(r) + " is missing";
        return {};
      }
      g.paths.push_back(ranks[r]);
    }
    if (g.paths.size() >= 2) out.push_back(std::move(g));
  }
  if (out.empty()) *error = "no PREFIX_rank<r>.npy groups of 2 or more ranks in " + dir;
  return out;
}

struct Pooled {
  double sq_err = 0, sq_ref = 0, max_abs = 0;
  bool agree = true;
  bool failed = false;
};

struct Row {
  std::string label;
  AllReduceOptions options;
  bool bf16 = false;  // cast the inputs to bf16 (the bf16 ring)
};

std::vector<Row> Rows(const Settings& s) {
  std::vector<Row> rows;
  Row ring;
  ring.label = "ring (bf16 on the wire)";
  ring.options.algorithm = Algorithm::kRing;
  ring.bf16 = true;
  rows.push_back(ring);
  struct Wire { Codec codec; size_t block; ScaleFormat scale; };
  const Wire wires[] = {{Codec::kInt8, 64, ScaleFormat::kF32}, {Codec::kInt8, 32, ScaleFormat::kBF16},
                        {Codec::kInt4, 32, ScaleFormat::kBF16}, {Codec::kFp8E4M3, 32, ScaleFormat::kBF16},
                        {Codec::kFp8E5M2, 32, ScaleFormat::kBF16}, {Codec::kInt8, 128, ScaleFormat::kTwoLevel},
                        {Codec::kInt4, 128, ScaleFormat::kTwoLevel}};
  for (const Wire& w : wires)
    for (Algorithm a : {Algorithm::kFullBidir, Algorithm::kSemi, Algorithm::kTwoShot})
      for (Rotation rot : {Rotation::kNone, Rotation::kHadamard}) {
        Config c{a, Phases::kRSAG};
        c.codec = w.codec;
        c.rotation = rot;
        c.scale = w.scale;
        Row r;
        r.options = OptionsFor(s, c, w.block);
        r.label = c.label() + " B" + std::to_string(w.block);
        rows.push_back(r);
      }
  return rows;
}

}  // namespace

bool ActivationsSection(const Settings& s, Report* rep, std::vector<std::string>* errors) {
  std::string error;
  const std::vector<Group> groups = FindGroups(s.activations, &error);
  if (groups.empty()) {
    errors->push_back(error);
    return false;
  }
  const int n = int(groups[0].paths.size());
  std::unique_ptr<InProcessGroup> group;
  if (Status st = InProcessGroup::Create(n, &group); !st.ok()) {
    errors->push_back(st.ToString());
    return false;
  }
  const std::vector<Row> rows = Rows(s);
  std::map<std::string, std::vector<Pooled>> pooled;  // kind -> per row
  size_t elements = 0;
  for (const Group& g : groups) {
    if (int(g.paths.size()) != n) {
      errors->push_back(g.prefix + ": " + std::to_string(g.paths.size()) + " ranks, the others " +
                        std::to_string(n));
      return false;
    }
    const size_t nr = size_t(n);
    std::vector<NpyArray> in(nr);
    for (int r = 0; r < n; ++r) {
      if (Status st = ReadNpy(g.paths[size_t(r)], &in[size_t(r)]); !st.ok()) {
        errors->push_back(st.message());
        return false;
      }
      if (in[size_t(r)].dtype != NpyDType::kFloat32 || in[size_t(r)].count() != in[0].count()) {
        errors->push_back(g.paths[size_t(r)] + ": every rank's file must be float32 of one shape");
        return false;
      }
    }
    const size_t count = in[0].count();
    elements += count;
    std::vector<double> exact(count, 0.0);
    for (const NpyArray& a : in)
      for (size_t i = 0; i < count; ++i) exact[i] += double(a.f32[i]);
    std::vector<std::vector<float>> f32(nr);
    std::vector<std::vector<uint16_t>> bf16(nr);
    std::vector<Pooled>& acc = pooled[g.kind];
    acc.resize(rows.size());
    for (size_t k = 0; k < rows.size(); ++k) {
      const Row& row = rows[k];
      std::vector<const void*> send;
      std::vector<void*> recv;
      for (int r = 0; r < n; ++r) {
        if (row.bf16) {
          bf16[size_t(r)].resize(count);
          for (size_t i = 0; i < count; ++i) bf16[size_t(r)][i] = F32ToBF16(in[size_t(r)].f32[i]);
          send.push_back(bf16[size_t(r)].data());
          recv.push_back(bf16[size_t(r)].data());  // in place
        } else {
          f32[size_t(r)] = in[size_t(r)].f32;
          send.push_back(f32[size_t(r)].data());
          recv.push_back(f32[size_t(r)].data());
        }
      }
      GroupCallResult call;
      const DType dt = row.bf16 ? DType::kBFloat16 : DType::kFloat32;
      if (Status st = group->AllReduce(send, recv, count, dt, row.options, &call); !st.ok()) {
        errors->push_back(row.label + " on " + g.prefix + ": " + st.ToString());
        acc[k].failed = true;
        continue;
      }
      acc[k].agree &= FirstDifferentRank(recv, count * DTypeSize(dt)) < 0;
      for (size_t i = 0; i < count; ++i) {
        const double got = row.bf16 ? double(BF16ToF32(bf16[0][i])) : double(f32[0][i]);
        const double e = got - exact[i];
        acc[k].sq_err += e * e;
        acc[k].sq_ref += exact[i] * exact[i];
        acc[k].max_abs = std::max(acc[k].max_abs, std::fabs(e));
      }
    }
    std::fprintf(stderr, "  [activations] %s: %d ranks x %zu\n", g.prefix.c_str(), n, count);
  }
  rep->Line("## 6. Real activations: " + std::to_string(groups.size()) + " AllReduce operands of " +
            std::to_string(n) + " ranks (" + std::to_string(elements) + " elements per rank in all)");
  rep->Line();
  rep->Line("The operands of the model's AllReduce calls, written by `equarx-gemma3 eval --dump-activations` "
            "(`bash bench/accuracy_report.sh` makes them and this report), each group run as one call with the ranks' own files "
            "as inputs (f32; the bf16 ring casts them to bf16). Errors against the exact f64 sum, pooled "
            "over every call of a kind: `rel RMS` = sqrt(sum err^2 / sum exact^2); `MSE / bf16 ring` = "
            "pooled squared error over the bf16 ring's. rs+ag throughout.");
  rep->Line();
  bool ok = true;
  for (const auto& [kind, acc] : pooled) {
    rep->Line(std::string("**") + (kind == "mlp" ? "MLP output" : "attention output") + "**");
    rep->Line();
    rep->Line("| configuration | rel RMS | MSE / bf16 ring | max abs | ranks agree |");
    rep->Line("|---|---:|---:|---:|:---:|");
    const double base = acc[0].sq_err;
    for (size_t k = 0; k < rows.size(); ++k) {
      const Pooled& p = acc[k];
      if (p.failed) {
        ok = false;
        rep->Line("| " + rows[k].label + " | error | | | |");
        continue;
      }
      if (!p.agree) {
        ok = false;
        errors->push_back(rows[k].label + ": ranks disagree on real activations");
      }
      rep->Line("| " + rows[k].label + " | " + Sci(p.sq_ref > 0 ? std::sqrt(p.sq_err / p.sq_ref) : 0.0) +
                " | " + Fmt("%.2f", base > 0 ? p.sq_err / base : 0.0) + " | " + Sci(p.max_abs) + " | " +
                (p.agree ? "yes" : "NO") + " |");
    }
    rep->Line();
  }
  return ok;
}

}  // namespace equarx::tools
