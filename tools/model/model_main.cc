// equarx-model — predicts AllReduce times from the library's own plans (src/algo/cost_model.h):
// hosts x ranks per host, message sizes, the link, and the codec's speed, which it measures on
// this machine with --calibrate or takes from flags. No communication.
//
//   equarx-model --hosts 4 -b 64K -e 64M -f 4 -d bf16 --algo ring,full_bidir,two_shot
//                --link-gbit 1 --alpha-us 120 --calibrate      (one command line)
//   equarx-model --hosts 8,64,512 --ranks-per-host 8 --link-gbit 100 --hierarchical --csv ...
//
// One row per (hosts, ranks per host, size, options) — and with --hierarchical one more per
// option set (auto excepted), the hierarchical schedule with those options across hosts. --csv
// prints comma-separated rows (header first) for scripts (bench/model/validate.py).
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "algo/cost_model.h"
#include "algo/resolve.h"
#include "args.h"
#include "codec/codec.h"
#include "common/env.h"
#include "core/validate.h"
#include "equarx/equarx.hpp"
#include "option_flags.h"

namespace {

using namespace equarx;

// A comma-separated list of positive integers; an error message or "".
std::string ParseIntList(std::string_view text, std::vector<int>* out) {
  out->clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const auto v = tools::ParseUint(text.substr(pos, comma - pos));
    if (!v || *v < 1 || *v > (1u << 20)) return "expected positive integers, got '" + std::string(text) + "'";
    out->push_back(int(*v));
    pos = comma + 1;
  }
  return "";
}

std::string ParsePositive(std::string_view text, double* out) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= 0) || v > 1e15)
    return "expected a non-negative number, got '" + s + "'";
  *out = v;
  return "";
}

// Median elements per second of `fn` over n elements: 15 samples, each of as many calls as
// take at least 2 ms (small buffers run in microseconds, where one call's time is mostly
// the clock's and the scheduler's noise).
template <typename F>
double Rate(size_t n, F fn) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  fn();  // warm-up, and how many calls make a sample
  const double once = std::chrono::duration<double>(Clock::now() - t0).count();
  const int calls = once >= 2e-3 ? 1 : int(std::min(10000.0, std::ceil(2e-3 / std::max(once, 1e-7))));
  std::vector<double> s;
  for (int i = 0; i < 15; ++i) {
    t0 = Clock::now();
    for (int c = 0; c < calls; ++c) fn();
    s.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / calls);
  }
  std::sort(s.begin(), s.end());
  return double(n) / s[s.size() / 2];
}

// One thread's rates of the kernels the model charges, for this codec, block and dtype, on
// buffers of n elements (a message's own size: past the caches the kernels run at the
// memory's pace, which is what a large call's pipeline sees).
algo::KernelRates Calibrate(const AllReduceOptions& asked, DType dtype, size_t n) {
  const AllReduceOptions o = algo::ResolveDefaults(asked, env::Read());  // the codec as it runs
  std::vector<uint8_t> local(n * DTypeSize(dtype));
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = float((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
  codec::Convert(DType::kFloat32, f.data(), n, dtype, local.data());
  const codec::WireSpec q = algo::QuantizedWire(o.codec, o.block, o.rounding, o.seed, o.scale);
  const codec::WireSpec raw{codec::RawFormatOf(dtype)};
  std::vector<uint8_t> in(codec::WireBytes(q, n) + codec::WireBytes(raw, n) + 64), out(in.size());
  algo::KernelRates r;
  codec::Encode(q, dtype, local.data(), n, in.data());
  r.dae = Rate(n, [&] { codec::DecodeAccumulateEncode(q, in.data(), n, dtype, local.data(), out.data()); });
  r.decode = Rate(n, [&] { codec::Decode(q, in.data(), n, dtype, local.data()); });
  codec::Encode(raw, dtype, local.data(), n, in.data());
  r.add = Rate(n, [&] { codec::DecodeAccumulateEncode(raw, in.data(), n, dtype, local.data(), out.data()); });
  const codec::RotationSpec rot{uint32_t(RotationBlockOf(o)), o.seed};
  r.rotate = Rate(n, [&] { codec::RotateForward(rot, dtype, local.data(), n, 0, f.data()); });
  return r;
}

std::string OptionsText(const algo::Prediction& p, const AllReduceOptions& o, bool hier) {
  std::string s = hier ? "hierarchical/" : "";
  s += std::string(AlgorithmName(p.algorithm));
  if (TakesCodec(p.algorithm)) s += std::string(" ") + std::string(CodecName(o.codec)) + " B" + std::to_string(o.block);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  size_t min_bytes = 64 << 10, max_bytes = 64 << 20, factor = 4;
  std::vector<int> hosts{4}, per_host{1};
  std::string dtype_name = "bf16";
  bool calibrate = false, csv = false, hierarchical = false;
  algo::Machine m;
  double link_gbit = 1, burst_ms = 0, stack_ns = 0, alpha_us = 50, per_message_us = 0, shm_gbs = 8, cores = 0;
  uint64_t threads = 1, calibrate_elements = uint64_t(1) << 20;
  double dae = 0, decode = 0, add = 0, rotate = 0;  // G elements/s; 0 = default or calibrated

  tools::ArgParser p("equarx-model", "predict AllReduce times from the library's plans (no communication)");
  p.AddCustom("hosts", [&](std::string_view v) { return ParseIntList(v, &hosts); },
              "hosts, comma-separated (4)", "LIST");
  p.AddCustom("ranks-per-host", [&](std::string_view v) { return ParseIntList(v, &per_host); },
              "ranks on each host, comma-separated (1)", "LIST");
  p.AddSize("minbytes", &min_bytes, "-b: smallest message in bytes (64K)");
  p.AddSize("maxbytes", &max_bytes, "-e: largest message in bytes (64M)");
  p.AddSize("stepfactor", &factor, "-f: size factor per step (4)");
  p.AddString("datatype", &dtype_name, "-d: f32, bf16 or f16 (bf16)");
  auto number = [&](const char* name, double* dst, const char* help) {
    p.AddCustom(name, [dst](std::string_view v) { return ParsePositive(v, dst); }, help, "X");
  };
  number("link-gbit", &link_gbit, "each host's link, Gbit/s per direction (1)");
  number("alpha-us", &alpha_us, "time per schedule step, microseconds (50)");
  number("per-message-us", &per_message_us, "time per message a rank sends, microseconds (0)");
  number("burst-ms", &burst_ms, "link burst allowance in ms of its rate (a token bucket; 0)");
  number("stack-ns-per-byte", &stack_ns, "network stack CPU per byte sent or received, ns (0)");
  number("shm-gbs", &shm_gbs, "intra-host bandwidth per rank, GB/s (8)");
  number("cores-per-host", &cores, "cores the ranks of a host share (0: no contention)");
  number("dae-gelems", &dae, "codec decode-accumulate-encode, G elements/s per thread");
  number("decode-gelems", &decode, "codec decode, G elements/s per thread");
  number("add-gelems", &add, "unquantized hop (widen, add, narrow), G elements/s per thread");
  number("rotate-gelems", &rotate, "one Hadamard rotation pass, G elements/s per thread");
  p.AddUint("threads", &threads, "codec threads per rank (1)");
  p.AddFlag("calibrate", &calibrate, "measure the codec rates on this machine (one thread)");
  p.AddUint("calibrate-elements", &calibrate_elements,
            "elements of --calibrate's buffers, 16384..67108864 (1048576)");
  p.AddFlag("hierarchical", &hierarchical, "add the hierarchical schedule with each option set as its inner algorithm");
  p.AddFlag("csv", &csv, "comma-separated rows with a header");
  AllReduceOptions base;
  p.AddCustom("options", [&](std::string_view v) {
    const Status s = ParseOptions(v, &base);
    return s.ok() ? std::string() : s.message();
  }, "options as key=value,... (equarx-info lists them); the flags below override them", "TEXT");
  // The model's own --threads (codec threads per rank) and --ranks-per-host (a list of layouts)
  // stand for the option fields of those names.
  tools::OptionFlags flags(&p, /*lists=*/true, {"threads", "ranks_per_host"});
  for (auto [c, name] : {std::pair{'b', "minbytes"}, {'e', "maxbytes"}, {'f', "stepfactor"}, {'d', "datatype"}})
    p.AddShort(c, name);
  if (auto rc = p.ParseCommandLine(argc, argv, tools::OptionFlags::ValuesHelp())) return *rc;
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "equarx-model: %s\n", msg.c_str());
    return 2;
  };
  const auto dtype = ParseDType(dtype_name);
  if (!dtype) return fail("unknown datatype '" + dtype_name + "' (f32, bf16, f16)");
  if (factor < 2) return fail("--stepfactor must be at least 2");
  if (min_bytes == 0 || min_bytes > max_bytes) return fail("need 0 < --minbytes <= --maxbytes");
  if (link_gbit <= 0 || shm_gbs <= 0) return fail("--link-gbit and --shm-gbs must be positive");
  if (threads < 1 || threads > 1024) return fail("--threads must be in [1, 1024]");
  if (calibrate_elements < (1u << 14) || calibrate_elements > (uint64_t(1) << 26))
    return fail("--calibrate-elements must be in [16384, 67108864]");
  for (int h : hosts)
    for (int r : per_host)
      if (int64_t(h) * r > (int64_t(1) << 20))
        return fail("hosts x ranks per host " + std::to_string(int64_t(h) * r) +
                    " is beyond the model's 1048576 ranks");
  std::vector<AllReduceOptions> sets = flags.Expand(base);
  for (const AllReduceOptions& o : sets) {
    const Status ok = CheckOptions(o);
    if (!ok.ok()) return fail(ok.message());
  }

  m.link_bytes_per_s = link_gbit * 1e9 / 8;
  m.link_burst_bytes = uint64_t(m.link_bytes_per_s * burst_ms * 1e-3);
  m.stack_s_per_byte = stack_ns * 1e-9;
  m.alpha_s = alpha_us * 1e-6;
  m.per_message_s = per_message_us * 1e-6;
  m.shm_bytes_per_s = shm_gbs * 1e9;
  m.cores_per_host = cores;
  m.threads = int(threads);
  m.check_bytes = sizeof(core::Descriptor);
  if (calibrate) m.rates = Calibrate(sets.front(), *dtype, size_t(calibrate_elements));
  if (dae > 0) m.rates.dae = dae * 1e9;
  if (decode > 0) m.rates.decode = decode * 1e9;
  if (add > 0) m.rates.add = add * 1e9;
  if (rotate > 0) m.rates.rotate = rotate * 1e9;

  if (csv) {
    std::printf("hosts,ranks_per_host,size_bytes,dtype,schedule,algo,options,steps,messages,wire_bytes_per_rank,"
                "host_egress_bytes,intra_host_bytes,latency_us,network_us,paced_us,memory_us,codec_us,stack_us,"
                "work_us,time_us\n");
  } else {
    std::printf("# equarx-model: link %.3g Gbit/s (burst %.3g ms), alpha %.3g us, per message %.3g us, "
                "shm %.3g GB/s, threads %d, cores/host %.3g\n# rates (G elements/s per thread): dae %.3f decode %.3f "
                "add %.3f rotate %.3f%s\n",
                link_gbit, burst_ms, alpha_us, per_message_us, shm_gbs, m.threads, cores, m.rates.dae / 1e9,
                m.rates.decode / 1e9, m.rates.add / 1e9, m.rates.rotate / 1e9,
                calibrate ? (" (measured, " + codec::TargetName(codec::CurrentTarget()) + ")").c_str() : "");
    std::printf("# %5s %4s %11s %-28s %6s %13s %13s %10s %10s %10s %10s %12s\n", "hosts", "R", "size",
                "schedule", "steps", "wire/rank", "host egress", "lat(us)", "net(us)", "mem(us)",
                "codec(us)", "time(us)");
  }
  // Each call resolves as the library's would (defaults from the environment), and auto on
  // this network: EQUARX_TUNE_FILE's table, else the cost model's with EQUARX_LINK_GBIT,
  // EQUARX_STEP_US and EQUARX_MESSAGE_US set to this run's link, step and message time (the
  // built-in kernel rates, one codec thread).
  env::Settings network = env::Read();
  network.link_gbit = link_gbit;
  network.step_us = alpha_us;
  network.message_us = per_message_us;
  m.env = &network;
  algo::AutoTables auto_tables(network);
  auto table_for = [&](const AllReduceOptions& o, int h, int r, bool hier) {
    AllReduceOptions t = o;
    t.ranks_per_host = uint32_t(r);
    if (hier) {
      t.inner = o.algorithm;
      t.algorithm = Algorithm::kHierarchical;
    }
    algo::Resolved res;  // the call's table (the built-in one when it does not use auto)
    (void)algo::Resolve({t, *dtype, 1, h * r}, network, &auto_tables, &res);
    return *res.table;
  };
  for (int h : hosts)
    for (int r : per_host) {
      algo::Machine mm = m;
      mm.hosts = h;
      mm.ranks_per_host = r;
      std::vector<algo::TuneTable> tables;  // per option set: flat, hierarchical
      for (const AllReduceOptions& o : sets)
        for (bool hier : {false, true}) tables.push_back(table_for(o, h, r, hier));
      for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
        const size_t count = bytes / DTypeSize(*dtype);
        for (size_t i = 0; i < sets.size(); ++i)
          for (int hier = 0; hier <= (hierarchical && sets[i].algorithm != Algorithm::kAuto ? 1 : 0); ++hier) {
            const AllReduceOptions& o = sets[i];
            const algo::TuneTable& table = tables[2 * i + size_t(hier)];
            const algo::Prediction pr = hier ? algo::PredictHierarchical(o, *dtype, count, mm, table)
                                             : algo::PredictFlat(o, *dtype, count, mm, table);
            const AllReduceOptions resolved = algo::ResolveDefaults(o, network);
            const std::string name = OptionsText(pr, resolved, hier);
            if (csv) {
              std::printf("%d,%d,%zu,%s,%s,%s,\"%s\",%d,%llu,%llu,%llu,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
                          h, r,
                          bytes, std::string(DTypeName(*dtype)).c_str(), hier ? "hierarchical" : "flat",
                          std::string(AlgorithmName(pr.algorithm)).c_str(),
                          FormatOptions(resolved).c_str(), pr.steps, (unsigned long long)pr.messages,
                          (unsigned long long)pr.wire_bytes_per_rank,
                          (unsigned long long)pr.host_egress_bytes,
                          (unsigned long long)pr.intra_host_bytes, pr.latency_s * 1e6,
                          pr.network_s * 1e6, pr.paced_s * 1e6, pr.memory_s * 1e6, pr.codec_s * 1e6,
                          pr.stack_s * 1e6, pr.work_s * 1e6, pr.seconds * 1e6);
            } else {
              std::printf("  %5d %4d %11zu %-28s %6d %13llu %13llu %10.1f %10.1f %10.1f %10.1f %12.1f\n", h,
                          r, bytes, name.c_str(), pr.steps, (unsigned long long)pr.wire_bytes_per_rank,
                          (unsigned long long)pr.host_egress_bytes, pr.latency_s * 1e6,
                          pr.network_s * 1e6, pr.memory_s * 1e6, pr.codec_s * 1e6, pr.seconds * 1e6);
            }
          }
      }
    }
  return 0;
}
