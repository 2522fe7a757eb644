// equarx — status codes returned at every module boundary.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace equarx {

/// What went wrong. The numeric values are stable (the C API reuses them).
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,  ///< a bad argument on this rank (or, reported on all ranks, on some rank)
  kMismatch = 2,         ///< ranks called with different counts, dtypes or options
  kTimeout = 3,          ///< the per-call deadline passed before the collective finished
  kRemoteError = 4,      ///< a peer failed or went away during the collective
  kInternal = 5,         ///< a bug in equarx; please report it
  kUnsupported = 6,      ///< a valid request this build cannot serve
  kIoError = 7,          ///< a file could not be read or written (tools)
};

/// Short stable name of a code, e.g. "invalid_argument".
std::string_view StatusCodeName(StatusCode code);

/// A code plus a human-readable message. Cheap when ok.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "invalid_argument: block size 7 is out of range [16, 4096]" (or "ok").
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status Mismatch(std::string m) { return {StatusCode::kMismatch, std::move(m)}; }
inline Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
inline Status RemoteError(std::string m) { return {StatusCode::kRemoteError, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }

}  // namespace equarx

/// Returns from the enclosing function if `expr` is not ok.
#define EQUARX_RETURN_IF_ERROR(expr)            \
  do {                                          \
    ::equarx::Status equarx_status_ = (expr);   \
    if (!equarx_status_.ok()) return equarx_status_; \
  } while (0)
