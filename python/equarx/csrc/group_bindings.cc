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

/// N communicators of one process; AllReduce runs rank r on thread r. Calls are serialized.
class PyGroup {
 public:
  explicit PyGroup(int ranks) {
    if (ranks < 1) ThrowInvalid("an in-process group needs at least 1 rank, got " + std::to_string(ranks));
    Check(CreateInProcessGroup(ranks, &comms_));
  }
  int size() const { return int(comms_.size()); }

  /// Returns (seconds, bytes sent by each rank during this call).
  std::tuple<double, std::vector<uint64_t>> AllReduce(std::vector<InBytes> send,
                                                      std::vector<OutBytes> recv,
                                                      const std::string& dtype, nb::dict options) {
    const DType t = DTypeFromName(dtype);
    const AllReduceOptions opt = OptionsFromDict(options);
    const size_t n = comms_.size();
    if (send.size() != n || recv.size() != n)
      ThrowInvalid("expected " + std::to_string(n) + " send and receive buffers (one per rank), got " +
                   std::to_string(send.size()) + " and " + std::to_string(recv.size()));
    std::vector<size_t> counts(n);
    for (size_t r = 0; r < n; ++r) {
      counts[r] = Count(send[r].size(), t);
      if (recv[r].size() != send[r].size())
        ThrowInvalid("rank " + std::to_string(r) + ": output buffer size differs from the input's");
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
          status[r] = comms_[r]->AllReduce(send[r].data(), recv[r].data(), counts[r], t, opt);
        });
      for (auto& th : threads) th.join();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (size_t r = 0; r < n; ++r) sent[r] = comms_[r]->stats().bytes_sent - before[r];
    }
    for (size_t r = 0; r < n; ++r)
      if (!status[r].ok()) throw StatusError(status[r].code(), "rank " + std::to_string(r) + ": " + status[r].message());
    return {seconds, sent};
  }

 private:
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::mutex mu_;
};

}  // namespace

PyComm::PyComm(std::unique_ptr<Communicator> c) : comm_(std::move(c)) {}
PyComm::~PyComm() = default;

void PyComm::AllReduce(InBytes send, OutBytes recv, const std::string& dtype, nb::dict options) {
  const DType t = DTypeFromName(dtype);
  const AllReduceOptions opt = OptionsFromDict(options);
  if (recv.size() != send.size()) ThrowInvalid("output buffer size differs from the input's");
  const size_t count = Count(send.size(), t);
  Status s;
  {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mu_);
    s = comm_->AllReduce(send.data(), recv.data(), count, t, opt);
  }
  Check(s);
}

void BindGroup(nb::module_& m) {
  nb::class_<PyGroup>(m, "InProcessGroup")
      .def(nb::init<int>(), nb::arg("ranks"))
      .def_prop_ro("size", &PyGroup::size)
      .def("allreduce", &PyGroup::AllReduce, nb::arg("send"), nb::arg("recv"), nb::arg("dtype"),
           nb::arg("options"));
  nb::class_<PyComm>(m, "Communicator")
      .def_prop_ro("rank", [](PyComm& c) { return c.comm().rank(); })
      .def_prop_ro("size", [](PyComm& c) { return c.comm().size(); })
      .def_prop_ro("bytes_sent", [](PyComm& c) { return c.comm().stats().bytes_sent; })
      .def_prop_ro("calls", [](PyComm& c) { return c.comm().stats().calls; })
      .def("allreduce", &PyComm::AllReduce, nb::arg("send"), nb::arg("recv"), nb::arg("dtype"),
           nb::arg("options"));
  m.def(
      "wire_bytes_per_rank",
      [](size_t count, const std::string& dtype, int ranks, nb::dict options) {
        if (ranks < 1) ThrowInvalid("ranks must be at least 1");
        return Communicator::WireBytesPerRank(count, DTypeFromName(dtype), ranks, OptionsFromDict(options));
      },
      nb::arg("count"), nb::arg("dtype"), nb::arg("ranks"), nb::arg("options"));
}

}  // namespace equarx::py
