// equarx Python bindings — communicators: an in-process group whose ranks run on threads
// (one AllReduce of N buffers per call, GIL released), and a single Communicator (one rank,
// e.g. of an MPI job; see mpi_bindings.cc) that Python calls from its own thread.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "common.h"
#include "equarx/communicator.h"

namespace equarx::py {
namespace {

size_t Count(size_t bytes, DType t) {
  if (bytes % DTypeSize(t)) ThrowInvalid("buffer is not a whole number of elements");
  return bytes / DTypeSize(t);
}

float* ResidualOf(OutBytes& r, size_t count, const std::string& what) {
  if (r.size() != count * sizeof(float))
    ThrowInvalid(what + ": the residual must hold one float32 per element (" + std::to_string(count) +
                 "), it holds " + std::to_string(r.size()) + " bytes");
  return reinterpret_cast<float*>(r.data());
}

}  // namespace

/// The telemetry of one call as a dict (keys as the AllReduceStats fields).
nb::dict StatsDict(const AllReduceStats& s);

namespace {

/// N communicators of one process; AllReduce runs rank r on thread r. Calls are serialized.
class PyGroup {
 public:
  explicit PyGroup(int ranks) {
    if (ranks < 1) ThrowInvalid("an in-process group needs at least 1 rank, got " + std::to_string(ranks));
    Check(CreateInProcessGroup(ranks, &comms_));
  }
  int size() const { return int(comms_.size()); }

  /// Returns (seconds, bytes sent by each rank during this call, per-rank telemetry dicts if
  /// `stats`). `residual`: empty, or one float32 buffer per rank (error feedback).
  std::tuple<double, std::vector<uint64_t>, nb::list> AllReduce(
      std::vector<InBytes> send, std::vector<OutBytes> recv, const std::string& dtype,
      nb::dict options, std::vector<OutBytes> residual, bool stats) {
    const DType t = DTypeFromName(dtype);
    const AllReduceOptions opt = OptionsFromDict(options);
    const size_t n = comms_.size();
    if (send.size() != n || recv.size() != n)
      ThrowInvalid("expected " + std::to_string(n) + " send and receive buffers (one per rank), got " +
                   std::to_string(send.size()) + " and " + std::to_string(recv.size()));
    if (!residual.empty() && residual.size() != n)
      ThrowInvalid("expected " + std::to_string(n) + " residual buffers (one per rank), got " +
                   std::to_string(residual.size()));
    std::vector<size_t> counts(n);
    std::vector<AllReduceExtras> extras(n);
    std::vector<AllReduceStats> st(n);
    for (size_t r = 0; r < n; ++r) {
      counts[r] = Count(send[r].size(), t);
      if (recv[r].size() != send[r].size())
        ThrowInvalid("rank " + std::to_string(r) + ": output buffer size differs from the input's");
      if (!residual.empty()) extras[r].residual = ResidualOf(residual[r], counts[r], "rank " + std::to_string(r));
      if (stats) extras[r].stats = &st[r];
    }
    std::vector<Status> status(n);
    std::vector<uint64_t> before(n), sent(n);
    double seconds = 0;
    {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t r = 0; r < n; ++r) before[r] = comms_[r]->stats().bytes_sent;
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> threads;
      threads.reserve(n);
      for (size_t r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
          status[r] = comms_[r]->AllReduce(send[r].data(), recv[r].data(), counts[r], t, opt, extras[r]);
        });
      for (auto& th : threads) th.join();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (size_t r = 0; r < n; ++r) sent[r] = comms_[r]->stats().bytes_sent - before[r];
    }
    for (size_t r = 0; r < n; ++r)
      if (!status[r].ok()) throw StatusError(status[r].code(), "rank " + std::to_string(r) + ": " + status[r].message());
    nb::list stats_out;
    if (stats)
      for (const AllReduceStats& s : st) stats_out.append(StatsDict(s));
    return {seconds, sent, stats_out};
  }

 private:
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::mutex mu_;
};

}  // namespace

PyComm::PyComm(std::unique_ptr<Communicator> c) : comm_(std::move(c)) {}
PyComm::~PyComm() = default;

nb::dict StatsDict(const AllReduceStats& s) {
  nb::dict d;
  d["encoded_values"] = s.encoded_values;
  d["clipped"] = s.clipped;
  d["sum_sq_err_est"] = s.sum_sq_err_est;
  d["rms_err_est"] = s.rms_err_est;
  d["max_abs_err_est"] = double(s.max_abs_err_est);
  d["encoded_rms"] = s.encoded_rms;
  d["rel_rms_err_est"] = s.rel_rms_err_est;
  return d;
}

nb::object PyComm::AllReduce(InBytes send, OutBytes recv, const std::string& dtype, nb::dict options,
                             std::vector<OutBytes> residual, bool stats) {
  const DType t = DTypeFromName(dtype);
  const AllReduceOptions opt = OptionsFromDict(options);
  if (recv.size() != send.size()) ThrowInvalid("output buffer size differs from the input's");
  if (residual.size() > 1) ThrowInvalid("one residual buffer per rank");
  const size_t count = Count(send.size(), t);
  AllReduceExtras extras;
  AllReduceStats st;
  if (!residual.empty()) extras.residual = ResidualOf(residual[0], count, "residual");
  if (stats) extras.stats = &st;
  Status s;
  {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mu_);
    s = comm_->AllReduce(send.data(), recv.data(), count, t, opt, extras);
  }
  Check(s);
  if (!stats) return nb::none();
  return StatsDict(st);
}

void BindGroup(nb::module_& m) {
  nb::class_<PyGroup>(m, "InProcessGroup")
      .def(nb::init<int>(), nb::arg("ranks"))
      .def_prop_ro("size", &PyGroup::size)
      .def("allreduce", &PyGroup::AllReduce, nb::arg("send"), nb::arg("recv"), nb::arg("dtype"),
           nb::arg("options"), nb::arg("residual") = std::vector<OutBytes>(), nb::arg("stats") = false);
  nb::class_<PyComm>(m, "Communicator")
      .def_prop_ro("rank", [](PyComm& c) { return c.comm().rank(); })
      .def_prop_ro("size", [](PyComm& c) { return c.comm().size(); })
      .def_prop_ro("bytes_sent", [](PyComm& c) { return c.comm().stats().bytes_sent; })
      .def_prop_ro("calls", [](PyComm& c) { return c.comm().stats().calls; })
      .def_prop_ro("scratch_bytes", [](PyComm& c) { return c.comm().stats().scratch_bytes; })
      .def_prop_ro("ranks_per_host", [](PyComm& c) { return c.comm().ranks_per_host(); })
      .def("allreduce", &PyComm::AllReduce, nb::arg("send"), nb::arg("recv"), nb::arg("dtype"),
           nb::arg("options"), nb::arg("residual") = std::vector<OutBytes>(), nb::arg("stats") = false);
  m.def(
      "wire_bytes_per_rank",
      [](size_t count, const std::string& dtype, int ranks, nb::dict options) {
        if (ranks < 1) ThrowInvalid("ranks must be at least 1");
        return Communicator::WireBytesPerRank(count, DTypeFromName(dtype), ranks, OptionsFromDict(options));
      },
      nb::arg("count"), nb::arg("dtype"), nb::arg("ranks"), nb::arg("options"));
}

}  // namespace equarx::py
