// equarx C API shim (include/equarx/equarx.h): one guard on every entry point, so no C++
// exception ever crosses into C; statuses become result codes and the last message is kept
// on the communicator.
#include "equarx/equarx.h"

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "equarx/communicator.h"
#include "equarx/bootstrap.h"
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

// The C enums are the C++ ones, value for value.
static_assert(int(equarx::Algorithm::kRing) == equarxAlgoRing &&
              int(equarx::Algorithm::kFull) == equarxAlgoFull &&
              int(equarx::Algorithm::kFullBidir) == equarxAlgoFullBidir &&
              int(equarx::Algorithm::kSemi) == equarxAlgoSemi &&
              int(equarx::Algorithm::kNaiveFp8) == equarxAlgoNaiveFp8 &&
              int(equarx::Algorithm::kTwoShot) == equarxAlgoTwoShot &&
              int(equarx::Algorithm::kAuto) == equarxAlgoAuto &&
              int(equarx::Algorithm::kHierarchical) == equarxAlgoHierarchical &&
              int(equarx::Algorithm::kOneShot) == equarxAlgoOneShot &&
              int(equarx::Algorithm::kOneShotRaw) == equarxAlgoOneShotRaw &&
              int(equarx::Algorithm::kRecursiveDoubling) == equarxAlgoRecursiveDoubling);
static_assert(int(equarx::Phases::kRS) == equarxPhasesRS && int(equarx::Phases::kAG) == equarxPhasesAG &&
              int(equarx::Phases::kRSAG) == equarxPhasesRSAG);
static_assert(int(equarx::Codec::kInt8) == equarxCodecInt8 && int(equarx::Codec::kInt4) == equarxCodecInt4 &&
              int(equarx::Codec::kFp8E4M3) == equarxCodecFp8E4M3 &&
              int(equarx::Codec::kFp8E5M2) == equarxCodecFp8E5M2 &&
              int(equarx::Codec::kInt6) == equarxCodecInt6 && int(equarx::Codec::kInt5) == equarxCodecInt5);
static_assert(int(equarx::Rounding::kNearest) == equarxRoundNearest &&
              int(equarx::Rounding::kStochastic) == equarxRoundStochastic);
static_assert(int(equarx::Rotation::kDefault) == equarxRotationDefault &&
              int(equarx::Rotation::kNone) == equarxRotationNone &&
              int(equarx::Rotation::kHadamard) == equarxRotationHadamard);
static_assert(int(equarx::ScaleFormat::kF32) == equarxScaleF32 &&
              int(equarx::ScaleFormat::kBF16) == equarxScaleBF16 &&
              int(equarx::ScaleFormat::kTwoLevel) == equarxScaleTwoLevel &&
              int(equarx::ScaleFormat::kDefault) == equarxScaleDefault);
static_assert(int(equarx::DType::kFloat32) == equarxFloat32 &&
              int(equarx::DType::kBFloat16) == equarxBFloat16 &&
              int(equarx::DType::kFloat16) == equarxFloat16);
static_assert(int(equarx::StatusCode::kIoError) == equarxIoError);

// Where each option of the table (equarx/options.h) lives in equarxConfig_t. Options not
// listed here (the diagnostic `mode`) keep their defaults from C.
struct CSlot {
  const char* name;
  size_t offset;
  size_t bytes;
  bool is_signed;
};
#define EQUARX_C_SLOT(field) \
  CSlot { #field, offsetof(equarxConfig_t, field), sizeof(equarxConfig_t::field), \
          std::is_signed_v<decltype(equarxConfig_t::field)> }
constexpr CSlot kSlots[] = {
    EQUARX_C_SLOT(algorithm),   EQUARX_C_SLOT(phases),      EQUARX_C_SLOT(codec),
    EQUARX_C_SLOT(block),       EQUARX_C_SLOT(microshards), EQUARX_C_SLOT(quantize_min_bytes),
    EQUARX_C_SLOT(f32_partials), EQUARX_C_SLOT(timeout_ms), EQUARX_C_SLOT(validate),
    EQUARX_C_SLOT(rounding),    EQUARX_C_SLOT(seed),        EQUARX_C_SLOT(rotation),
    EQUARX_C_SLOT(scale),
};
#undef EQUARX_C_SLOT

// The value of a slot as uint64, or nullopt if it is negative.
std::optional<uint64_t> Read(const equarxConfig_t& c, const CSlot& s) {
  const char* p = reinterpret_cast<const char*>(&c) + s.offset;
  if (s.bytes == 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  if (s.bytes == 4) {
    if (s.is_signed) {
      int32_t v;
      std::memcpy(&v, p, 4);
      if (v < 0) return std::nullopt;
      return uint64_t(v);
    }
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  return std::nullopt;
}

// Copies the caller's config, reading only the fields its `size` says it has, through the
// option table.
equarx::Status ToOptions(const equarxConfig_t* in, equarx::AllReduceOptions* o) {
  equarxConfig_t c;
  equarxConfigInit(&c);
  if (in) {
    if (in->size < offsetof(equarxConfig_t, block) || in->size > (1u << 16))
      return equarx::InvalidArgument("config.size is not set: initialise equarxConfig_t with "
                                     "EQUARX_CONFIG_INITIALIZER or equarxConfigInit");
    std::memcpy(&c, in, in->size < sizeof c ? in->size : sizeof c);
  }
  for (const CSlot& slot : kSlots) {
    const equarx::OptionField* f = equarx::FindOptionField(slot.name);
    if (!f) return equarx::Internal(std::string("config field ") + slot.name + " has no option");
    const auto v = Read(c, slot);
    if (!v) return equarx::InvalidArgument(std::string("config: ") + slot.name + " is negative");
    // C truth values: any non-zero int is true. Ranges are checked by the AllReduce itself
    // (CheckOptions, on every rank, with the option's own message); an enum value that does
    // not fit the field is kept out of range rather than truncated.
    uint64_t x = *v;
    if (f->kind == equarx::OptionKind::kBool) x = x != 0;
    if (f->kind == equarx::OptionKind::kEnum && x > 255) x = 255;
    f->set(o, x);
  }
  if (c.size >= offsetof(equarxConfig_t, options) + sizeof c.options) {
    const std::string_view text(c.options, strnlen(c.options, sizeof c.options));
    EQUARX_RETURN_IF_ERROR(equarx::ParseOptions(text, o));
  }
  return equarx::Status::Ok();
}

thread_local std::string g_option_error;
thread_local std::string g_create_error;  // equarxCommCreate's last failure on this thread

// *out = get(communicator), for the communicator's getters; null arguments are refused.
template <class T, class Get>
equarxResult_t Read(equarxComm_t comm, T* out, Get get) {
  if (!comm || !out) return equarxInvalidArgument;
  *out = T(get(*comm->comm));
  return equarxSuccess;
}

}  // namespace

extern "C" {

void equarxConfigInit(equarxConfig_t* config) {
  if (!config) return;
  const equarxConfig_t d = EQUARX_CONFIG_INITIALIZER;
  *config = d;
}

equarxResult_t equarxConfigSetOption(equarxConfig_t* config, const char* key, const char* value) {
  g_option_error.clear();
  if (!config || !key || !value) {
    g_option_error = "config, key and value must not be NULL";
    return equarxInvalidArgument;
  }
  if (config->size < offsetof(equarxConfig_t, options) + sizeof config->options) {
    g_option_error = "config.size predates the options text: initialise with EQUARX_CONFIG_INITIALIZER";
    return equarxInvalidArgument;
  }
  try {
    const std::string item = std::string(key) + "=" + value;
    if (item.find_first_of(",; \t\n") != std::string::npos) {
      g_option_error = "option key and value must not contain separators (, ; or spaces)";
      return equarxInvalidArgument;
    }
    equarx::AllReduceOptions probe;  // the same checks and messages as every front end
    if (const equarx::Status st = equarx::ParseOptions(item, &probe); !st.ok()) {
      g_option_error = st.message();
      return equarxInvalidArgument;
    }
    const size_t used = strnlen(config->options, sizeof config->options);
    const std::string add = (used ? "," : "") + item;
    if (used + add.size() + 1 > sizeof config->options) {
      g_option_error = "config.options is full (" + std::to_string(sizeof config->options) + " bytes)";
      return equarxInvalidArgument;
    }
    std::memcpy(config->options + used, add.c_str(), add.size() + 1);
    return equarxSuccess;
  } catch (...) {
    g_option_error = "internal: exception in equarxConfigSetOption";
    return equarxInternalError;
  }
}

const char* equarxGetLastOptionError(void) { return g_option_error.c_str(); }

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
    case equarxResult_ForceInt: break;  // not a result
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

equarxResult_t equarxCommCreate(int rank, int nranks, equarxAllGatherFn allgather, void* user,
                                const char* data_path, int setup_timeout_ms, equarxComm_t* out) {
  g_create_error.clear();
  if (!out) return equarxInvalidArgument;
  *out = nullptr;
  auto create = [&]() -> equarx::Status {
    if (!allgather) return equarx::InvalidArgument("equarxCommCreate: allgather is NULL");
    equarx::BootstrapOptions o;
    EQUARX_RETURN_IF_ERROR(equarx::BootstrapOptions::FromEnvironment(&o));
    if (data_path) EQUARX_RETURN_IF_ERROR(equarx::ParseDataPath(data_path, &o.data_path));
    if (setup_timeout_ms > 0) o.setup_timeout_ms = setup_timeout_ms;
    auto exchange = [allgather, user](const void* mine, size_t bytes, void* all) {
      const equarxResult_t r = allgather(mine, bytes, all, user);
      if (r == equarxSuccess) return equarx::Status::Ok();
      const int code = int(r) >= int(equarxInvalidArgument) && int(r) <= int(equarxIoError) ? int(r)
                                                                                     : int(equarxInternalError);
      return equarx::Status(equarx::StatusCode(code),
                            std::string("the caller's set-up exchange failed: ") + equarxGetErrorString(r));
    };
    auto c = std::make_unique<equarxComm>();
    EQUARX_RETURN_IF_ERROR(equarx::CreateCommunicator(rank, nranks, exchange, o, &c->comm));
    *out = c.release();
    return equarx::Status::Ok();
  };
  return Guard(nullptr, [&] {
    const equarx::Status st = create();
    if (!st.ok()) g_create_error = st.ToString();
    return st;
  });
}

const char* equarxGetLastCreateError(void) { return g_create_error.c_str(); }

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
    if (!s.ok()) o.block = 1;
    const int dt = int(datatype);
    const auto dtype = equarx::DType(uint8_t(dt >= 0 && dt <= 2 ? dt : 255));
    equarx::AllReduceStats st;
    equarx::AllReduceExtras extras;
    extras.residual = residual;
    extras.stats = stats ? &st : nullptr;
    equarx::Status r = comm->comm->AllReduce(sendbuff, recvbuff, count, dtype, o, extras);
    if (stats) {
      const equarxStats_t c{.size = sizeof(equarxStats_t), .encoded_values = st.encoded_values,
                            .clipped = st.clipped, .sum_sq_err_est = st.sum_sq_err_est,
                            .rms_err_est = st.rms_err_est, .max_abs_err_est = st.max_abs_err_est,
                            .encoded_rms = st.encoded_rms, .rel_rms_err_est = st.rel_rms_err_est};
      const size_t n = stats->size < sizeof c ? stats->size : sizeof c;
      std::memcpy(reinterpret_cast<char*>(stats) + sizeof(size_t),
                  reinterpret_cast<const char*>(&c) + sizeof(size_t), n - sizeof(size_t));
    }
    return s.ok() ? r : s;
  });
}

equarxResult_t equarxCommRank(equarxComm_t comm, int* rank) {
  return Read(comm, rank, [](const equarx::Communicator& c) { return c.rank(); });
}

equarxResult_t equarxCommCount(equarxComm_t comm, int* count) {
  return Read(comm, count, [](const equarx::Communicator& c) { return c.size(); });
}

equarxResult_t equarxCommBytesSent(equarxComm_t comm, uint64_t* bytes) {
  return Read(comm, bytes, [](const equarx::Communicator& c) { return c.stats().bytes_sent; });
}

equarxResult_t equarxCommScratchBytes(equarxComm_t comm, uint64_t* bytes) {
  return Read(comm, bytes, [](const equarx::Communicator& c) { return c.stats().scratch_bytes; });
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
