// equarx C API shim (include/equarx/equarx.h): one guard on every entry point, so no C++
// exception ever crosses into C; statuses become result codes and the last message is kept
// on the communicator.
#include "equarx/equarx.h"

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "equarx/communicator.h"
#ifdef EQUARX_HAVE_MPI
#include "equarx/equarx_mpi.h"
#include "equarx/mpi.h"
#endif

struct equarxComm {
  std::unique_ptr<equarx::Communicator> comm;
  std::string last_error;
};

namespace {

equarxResult_t ToResult(const equarx::Status& s) { return equarxResult_t(int(s.code())); }

// Runs `fn` (returning a Status), turning exceptions into equarxInternalError.
template <typename Fn>
equarxResult_t Guard(equarxComm* c, Fn&& fn) {
  try {
    equarx::Status s = fn();
    if (c) c->last_error = s.ok() ? std::string() : s.ToString();
    return ToResult(s);
  } catch (const std::bad_alloc&) {
    if (c) c->last_error = "out of memory";
  } catch (const std::exception& e) {
    if (c) c->last_error = std::string("internal: ") + e.what();
  } catch (...) {
    if (c) c->last_error = "internal: unknown exception";
  }
  return equarxInternalError;
}

// Copies the caller's config, reading only the fields its `size` says it has.
equarx::Status ToOptions(const equarxConfig_t* in, equarx::AllReduceOptions* o) {
  equarxConfig_t c;
  equarxConfigInit(&c);
  if (in) {
    if (in->size < offsetof(equarxConfig_t, block) || in->size > (1u << 16))
      return equarx::InvalidArgument("config.size is not set: initialise equarxConfig_t with "
                                     "EQUARX_CONFIG_INITIALIZER or equarxConfigInit");
    std::memcpy(&c, in, in->size < sizeof c ? in->size : sizeof c);
  }
  o->algorithm = equarx::Algorithm(uint8_t(c.algorithm));
  o->phases = equarx::Phases(uint8_t(c.phases));
  o->codec = equarx::Codec(uint8_t(c.codec));
  if (c.algorithm < 0 || c.algorithm > 255 || c.phases < 0 || c.phases > 255 || c.codec < 0 ||
      c.codec > 255)
    return equarx::InvalidArgument("config: algorithm, phases or codec out of range");
  o->block = c.block;
  o->microshards = c.microshards;
  o->quantize_min_bytes = c.quantize_min_bytes;
  o->f32_partials = c.f32_partials != 0;
  o->timeout_ms = c.timeout_ms;
  o->validate = c.validate != 0;
  if (c.rounding < 0 || c.rounding > 255) return equarx::InvalidArgument("config: rounding out of range");
  o->rounding = equarx::Rounding(uint8_t(c.rounding));
  o->seed = c.seed;
  return equarx::Status::Ok();
}

}  // namespace

extern "C" {

void equarxConfigInit(equarxConfig_t* config) {
  if (!config) return;
  const equarxConfig_t d = EQUARX_CONFIG_INITIALIZER;
  *config = d;
}

const char* equarxGetErrorString(equarxResult_t result) {
  switch (result) {
    case equarxSuccess: return "ok";
    case equarxInvalidArgument: return "invalid_argument";
    case equarxMismatch: return "mismatch";
    case equarxTimeout: return "timeout";
    case equarxRemoteError: return "remote_error";
    case equarxInternalError: return "internal";
    case equarxUnsupported: return "unsupported";
    case equarxIoError: return "io_error";
  }
  return "unknown";
}

equarxResult_t equarxCommCreateInProcess(int nranks, equarxComm_t* comms) {
  if (!comms) return equarxInvalidArgument;
  return Guard(nullptr, [&] {
    std::vector<std::unique_ptr<equarx::Communicator>> v;
    EQUARX_RETURN_IF_ERROR(equarx::CreateInProcessGroup(nranks, &v));
    std::vector<std::unique_ptr<equarxComm>> out;
    for (auto& c : v) {
      out.push_back(std::make_unique<equarxComm>());
      out.back()->comm = std::move(c);
    }
    for (size_t r = 0; r < out.size(); ++r) comms[r] = out[r].release();
    return equarx::Status::Ok();
  });
}

#ifdef EQUARX_HAVE_MPI
equarxResult_t equarxCommCreateMpi(MPI_Comm comm, equarxComm_t* out) {
  if (!out) return equarxInvalidArgument;
  *out = nullptr;
  return Guard(nullptr, [&] {
    auto c = std::make_unique<equarxComm>();
    EQUARX_RETURN_IF_ERROR(equarx::CreateMpiCommunicator(comm, &c->comm));
    *out = c.release();
    return equarx::Status::Ok();
  });
}
#endif

equarxResult_t equarxAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               equarxDataType_t datatype, const equarxConfig_t* config,
                               equarxComm_t comm) {
  return equarxAllReduceEx(sendbuff, recvbuff, count, datatype, config, nullptr, nullptr, comm);
}

equarxResult_t equarxAllReduceEx(const void* sendbuff, void* recvbuff, size_t count,
                                 equarxDataType_t datatype, const equarxConfig_t* config,
                                 float* residual, equarxStats_t* stats, equarxComm_t comm) {
  if (!comm) return equarxInvalidArgument;
  return Guard(comm, [&] {
    equarx::AllReduceOptions o;
    equarx::Status s = ToOptions(config, &o);
    if (s.ok() && stats && (stats->size < offsetof(equarxStats_t, clipped) || stats->size > (1u << 16))) {
      s = equarx::InvalidArgument("stats.size is not set: initialise equarxStats_t with "
                                  "EQUARX_STATS_INITIALIZER");
      stats = nullptr;
    }
    // A bad config still goes through AllReduce's validation so that every rank hears of it:
    // an out-of-range block is forced here, reported by the descriptor exchange.
    if (!s.ok()) o.block = 0;
    const int dt = int(datatype);
    const auto dtype = equarx::DType(uint8_t(dt >= 0 && dt <= 2 ? dt : 255));
    equarx::AllReduceStats st;
    equarx::AllReduceExtras extras;
    extras.residual = residual;
    extras.stats = stats ? &st : nullptr;
    equarx::Status r = comm->comm->AllReduce(sendbuff, recvbuff, count, dtype, o, extras);
    if (stats) {
      equarxStats_t c;
      c.size = sizeof c;
      c.encoded_values = st.encoded_values;
      c.clipped = st.clipped;
      c.sum_sq_err_est = st.sum_sq_err_est;
      c.rms_err_est = st.rms_err_est;
      c.max_abs_err_est = st.max_abs_err_est;
      c.encoded_rms = st.encoded_rms;
      c.rel_rms_err_est = st.rel_rms_err_est;
      const size_t n = stats->size < sizeof c ? stats->size : sizeof c;
      std::memcpy(reinterpret_cast<char*>(stats) + sizeof(size_t),
                  reinterpret_cast<const char*>(&c) + sizeof(size_t), n - sizeof(size_t));
    }
    return s.ok() ? r : s;
  });
}

equarxResult_t equarxCommRank(equarxComm_t comm, int* rank) {
  if (!comm || !rank) return equarxInvalidArgument;
  *rank = comm->comm->rank();
  return equarxSuccess;
}

equarxResult_t equarxCommCount(equarxComm_t comm, int* count) {
  if (!comm || !count) return equarxInvalidArgument;
  *count = comm->comm->size();
  return equarxSuccess;
}

equarxResult_t equarxCommBytesSent(equarxComm_t comm, uint64_t* bytes) {
  if (!comm || !bytes) return equarxInvalidArgument;
  *bytes = comm->comm->stats().bytes_sent;
  return equarxSuccess;
}

const char* equarxCommGetLastError(equarxComm_t comm) {
  return comm ? comm->last_error.c_str() : "communicator is NULL";
}

equarxResult_t equarxCommDestroy(equarxComm_t comm) {
  if (!comm) return equarxInvalidArgument;
  return Guard(nullptr, [&] {
    delete comm;
    return equarx::Status::Ok();
  });
}

}  // extern "C"
