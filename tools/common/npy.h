// equarx tools — reading and writing NumPy .npy files.
//
// Supported: format versions 1.0, 2.0 and 3.0 (read), 1.0 (write; 2.0 only when a header
// would not fit 1.0's 16-bit length); little-endian float32 ('<f4') and float16 ('<f2');
// C order; any shape, including 0-d and empty arrays. Everything else is a clear error that
// names the file. The parser is bounds-checked throughout and never trusts the header:
// hostile or truncated input yields a Status, never a crash or an unbounded allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "equarx/status.h"

namespace equarx::tools {

enum class NpyDType : uint8_t { kFloat32, kFloat16 };

const char* NpyDTypeName(NpyDType t);  ///< "float32" / "float16"
size_t NpyDTypeSize(NpyDType t);

/// An array loaded from (or to be written to) a .npy file. Exactly one of f32 / f16 holds
/// the elements (f16 holds raw IEEE half bits), in C order.
struct NpyArray {
  NpyDType dtype = NpyDType::kFloat32;
  std::vector<size_t> shape;
  std::vector<float> f32;
  std::vector<uint16_t> f16;

  size_t count() const;  ///< product of shape (1 for a 0-d array)
};

/// "(4096, 4096)", "(7,)", "()" — NumPy's spelling.
std::string ShapeString(const std::vector<size_t>& shape);

/// Parses an in-memory .npy image; `name` is used in error messages.
Status ParseNpy(const uint8_t* bytes, size_t size, const std::string& name, NpyArray* out);

/// Reads a .npy file (kIoError if it cannot be read, kInvalidArgument if malformed).
Status ReadNpy(const std::string& path, NpyArray* out);

/// Serialises to an in-memory .npy image (version 1.0 header, 64-byte aligned data).
Status SerializeNpy(const NpyArray& array, std::vector<uint8_t>* out);

/// Writes a .npy file. The element vector matching `array.dtype` must hold count() elements.
Status WriteNpy(const std::string& path, const NpyArray& array);

}  // namespace equarx::tools
