// gguf.h — reading and writing GGUF files (the llama.cpp model container), version 2 and 3.
//
// Layout: magic "GGUF", u32 version, u64 tensor count, u64 metadata count, then the metadata
// key/value pairs (typed), then one info record per tensor (name, dims with the fastest-varying
// dimension first, ggml type, offset into the data section), padding to `general.alignment`
// (default 32) and the tensor data. The reader maps the whole file read-only; tensor data is
// borrowed from the mapping. The writer exists so that tests can build tiny synthetic models.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "equarx/status.h"

namespace gemma3 {

/// ggml tensor types this app knows (values as in the GGUF format).
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ5_0 = 6, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14,
  kBF16 = 30,
};
const char* GgmlTypeName(uint32_t type);
/// Elements per block and bytes per block of a type; false when the type is unsupported.
bool GgmlTypeBlock(uint32_t type, size_t* block_elems, size_t* block_bytes);

/// One metadata value. Arrays keep their element values (numbers widened, strings as is).
struct GgufValue {
  enum Kind { kInt, kUint, kFloat, kBool, kString, kArray } kind = kUint;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<GgufValue> arr;
  int64_t AsInt() const;
  double AsFloat() const;
};

struct GgufTensor {
  std::string name;
  std::vector<uint64_t> dims;  ///< dims[0] varies fastest (a row of a matrix)
  uint32_t type = 0;
  uint64_t offset = 0;         ///< from the start of the data section
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  uint64_t elements() const;
};

class GgufFile {
 public:
  GgufFile() = default;
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  /// Maps and parses `path`: kIoError if it cannot be read, kInvalidArgument (kUnsupported)
  /// for a malformed (unsupported) file.
  equarx::Status Open(const std::string& path);
  /// Parses an image in memory, which the caller keeps alive as long as this object (tensor
  /// data points into it). For tests and the fuzz harness (fuzz/gguf_fuzz.cc).
  equarx::Status OpenBytes(const uint8_t* data, size_t size);

  const GgufValue* Find(const std::string& key) const;
  int64_t GetInt(const std::string& key, int64_t fallback) const;
  double GetFloat(const std::string& key, double fallback) const;
  std::string GetString(const std::string& key, const std::string& fallback) const;
  const GgufTensor* Tensor(const std::string& name) const;
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  uint32_t version() const { return version_; }

 private:
  equarx::Status Parse(const uint8_t* base, size_t size, const std::string& name);
  void* map_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> index_;
};

/// Builds a GGUF file in memory and writes it (tests, synthetic models).
class GgufWriter {
 public:
  void SetU32(const std::string& key, uint32_t v);
  void SetF32(const std::string& key, float v);
  void SetBool(const std::string& key, bool v);
  void SetString(const std::string& key, const std::string& v);
  void SetStringArray(const std::string& key, const std::vector<std::string>& v);
  void SetF32Array(const std::string& key, const std::vector<float>& v);
  void SetI32Array(const std::string& key, const std::vector<int32_t>& v);
  /// `raw` holds the encoded blocks of `type` (size must match dims).
  void AddTensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                 std::vector<uint8_t> raw);
  equarx::Status Write(const std::string& path) const;
  /// The file's bytes, as Write would write them.
  void Serialize(std::vector<uint8_t>* image) const;

 private:
  struct Tensor { std::string name; std::vector<uint64_t> dims; uint32_t type; std::vector<uint8_t> raw; };
  std::vector<uint8_t> kv_bytes_;
  uint64_t kv_count_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace gemma3
