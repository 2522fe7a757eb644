// equarx Python bindings — a Communicator set up through a Python exchange (CreateCommunicator,
// include/equarx/bootstrap.h): `exchange(mine: bytes) -> bytes` returns every rank's bytes in
// rank order; equarx/bootstrap.py builds it over a key-value store (torch.distributed's Store,
// JAX's distributed client). The set-up runs with the GIL released; each exchange takes it.
#include <nanobind/stl/string.h>

#include <cstring>
#include <memory>
#include <string>

#include "common.h"

namespace equarx::py {

AllGatherFn PythonExchange(const nb::object& exchange, int size) {
  return [&exchange, size](const void* mine, size_t bytes, void* all) -> Status {
    nb::gil_scoped_acquire gil;
    try {
      nb::bytes got = nb::cast<nb::bytes>(exchange(nb::bytes(static_cast<const char*>(mine), bytes)));
      if (got.size() != bytes * size_t(size))
        return InvalidArgument("the set-up exchange returned " + std::to_string(got.size()) + " bytes, expected " +
                               std::to_string(bytes * size_t(size)));
      std::memcpy(all, got.c_str(), got.size());
      return Status::Ok();
    } catch (nb::python_error& e) {
      const bool timeout = e.matches(PyExc_TimeoutError);
      // The exception's type and message, without the traceback.
      const std::string what = std::string("the set-up exchange failed: ") +
                               nb::cast<std::string>(nb::handle(e.type()).attr("__name__")) + ": " +
                               nb::cast<std::string>(nb::str(e.value()));
      return timeout ? Timeout(what) : RemoteError(what);
    } catch (const std::exception& e) {
      return RemoteError(std::string("the set-up exchange failed: ") + e.what());
    }
  };
}

void BindBootstrap(nb::module_& m) {
  m.def(
      "exchange_communicator",
      [](int rank, int size, nb::callable exchange, const std::string& data_path, const std::string& interface,
         int timeout_ms, int encrypt) {
        BootstrapOptions o;
        Check(BootstrapOptions::FromEnvironment(&o));
        if (!data_path.empty()) Check(ParseDataPath(data_path, &o.data_path));
        if (!interface.empty()) o.socket_interface = interface;
        if (timeout_ms > 0) o.setup_timeout_ms = timeout_ms;
        if (encrypt >= 0) o.encrypt = encrypt != 0;  // < 0: EQUARX_ENCRYPT's
        const AllGatherFn gather = PythonExchange(exchange, size);
        std::unique_ptr<Communicator> c;
        {
          nb::gil_scoped_release nogil;  // collective; the exchange takes the GIL back
          Check(CreateCommunicator(rank, size, gather, o, &c));
        }
        return new PyComm(std::move(c));
      },
      nb::arg("rank"), nb::arg("size"), nb::arg("exchange"), nb::arg("data_path") = "",
      nb::arg("interface") = "", nb::arg("timeout_ms") = 0, nb::arg("encrypt") = -1, nb::rv_policy::take_ownership);
}

}  // namespace equarx::py
