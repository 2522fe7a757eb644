// equarx — Status helpers.
#include "equarx/status.h"

namespace equarx {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kMismatch: return "mismatch";
    case StatusCode::kTimeout: return "timeout";
    case StatusCode::kRemoteError: return "remote_error";
    case StatusCode::kInternal: return "internal";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kIoError: return "io_error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  std::string s(StatusCodeName(code_));
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

}  // namespace equarx
