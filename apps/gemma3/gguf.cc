// gguf.cc — GGUF parser (memory-mapped, bounds-checked) and a small writer for tests.
#include "gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

namespace gemma3 {
namespace {

enum : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32v = 6, kBoolv = 7,
  kStringv = 8, kArrayv = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// A cursor over the mapped bytes; every read checks the bounds.
struct Cursor {
  const uint8_t* p;
  size_t size;
  size_t pos = 0;
  bool ok = true;
  bool Take(void* out, size_t n) {
    if (!ok || n > size - pos) { ok = false; return false; }
    std::memcpy(out, p + pos, n);
    pos += n;
    return true;
  }
  template <typename T> T Get() { T v{}; Take(&v, sizeof(T)); return v; }
  std::string Str() {
    uint64_t n = Get<uint64_t>();
    if (!ok || n > size - pos) { ok = false; return {}; }
    std::string s(reinterpret_cast<const char*>(p + pos), n);
    pos += n;
    return s;
  }
};

bool ReadValue(Cursor& c, uint32_t type, GgufValue* v, int depth) {
  switch (type) {
    case kU8: v->kind = GgufValue::kUint; v->u = c.Get<uint8_t>(); break;
    case kI8: v->kind = GgufValue::kInt; v->i = c.Get<int8_t>(); break;
    case kU16: v->kind = GgufValue::kUint; v->u = c.Get<uint16_t>(); break;
    case kI16: v->kind = GgufValue::kInt; v->i = c.Get<int16_t>(); break;
    case kU32: v->kind = GgufValue::kUint; v->u = c.Get<uint32_t>(); break;
    case kI32: v->kind = GgufValue::kInt; v->i = c.Get<int32_t>(); break;
    case kU64: v->kind = GgufValue::kUint; v->u = c.Get<uint64_t>(); break;
    case kI64: v->kind = GgufValue::kInt; v->i = c.Get<int64_t>(); break;
    case kF32v: v->kind = GgufValue::kFloat; v->f = c.Get<float>(); break;
    case kF64: v->kind = GgufValue::kFloat; v->f = c.Get<double>(); break;
    case kBoolv: v->kind = GgufValue::kBool; v->b = c.Get<uint8_t>() != 0; break;
    case kStringv: v->kind = GgufValue::kString; v->s = c.Str(); break;
    case kArrayv: {
      if (depth > 2) return false;
      v->kind = GgufValue::kArray;
      uint32_t et = c.Get<uint32_t>();
      uint64_t n = c.Get<uint64_t>();
      if (!c.ok || n > c.size - c.pos) return false;  // every element takes at least a byte
      v->arr.resize(n);
      for (uint64_t k = 0; k < n && c.ok; ++k)
        if (!ReadValue(c, et, &v->arr[k], depth + 1)) return false;
      break;
    }
    default: return false;
  }
  return c.ok;
}

void PutBytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}
template <typename T> void Put(std::vector<uint8_t>& out, T v) { PutBytes(out, &v, sizeof v); }
void PutStr(std::vector<uint8_t>& out, const std::string& s) {
  Put<uint64_t>(out, s.size());
  PutBytes(out, s.data(), s.size());
}

}  // namespace

const char* GgmlTypeName(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32: return "F32";
    case GgmlType::kF16: return "F16";
    case GgmlType::kBF16: return "BF16";
    case GgmlType::kQ4_0: return "Q4_0";
    case GgmlType::kQ5_0: return "Q5_0";
    case GgmlType::kQ8_0: return "Q8_0";
    case GgmlType::kQ4_K: return "Q4_K";
    case GgmlType::kQ5_K: return "Q5_K";
    case GgmlType::kQ6_K: return "Q6_K";
  }
  return "unsupported";
}

bool GgmlTypeBlock(uint32_t type, size_t* block_elems, size_t* block_bytes) {
  size_t e = 0, b = 0;
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32: e = 1; b = 4; break;
    case GgmlType::kF16: case GgmlType::kBF16: e = 1; b = 2; break;
    case GgmlType::kQ4_0: e = 32; b = 18; break;
    case GgmlType::kQ5_0: e = 32; b = 22; break;
    case GgmlType::kQ8_0: e = 32; b = 34; break;
    case GgmlType::kQ4_K: e = 256; b = 144; break;
    case GgmlType::kQ5_K: e = 256; b = 176; break;
    case GgmlType::kQ6_K: e = 256; b = 210; break;
    default: return false;
  }
  *block_elems = e;
  *block_bytes = b;
  return true;
}

int64_t GgufValue::AsInt() const {
  switch (kind) {
    case kInt: return i;
    case kUint: return static_cast<int64_t>(u);
    // Truncated toward zero; NaN and values outside int64 (from a hostile file) read as 0
    // rather than an undefined conversion.
    case kFloat: return f > -9.2e18 && f < 9.2e18 ? static_cast<int64_t>(f) : 0;
    case kBool: return b;
    default: return 0;
  }
}
double GgufValue::AsFloat() const {
  return kind == kFloat ? f : static_cast<double>(AsInt());
}

uint64_t GgufTensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  return n;
}

GgufFile::~GgufFile() {
  if (map_) munmap(map_, size_);
}

equarx::Status GgufFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return equarx::IoError("cannot open " + path);
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size < 24) {
    ::close(fd);
    return equarx::InvalidArgument(path + ": too small");
  }
  size_ = static_cast<size_t>(st.st_size);
  map_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    return equarx::IoError("mmap failed: " + path);
  }
  return Parse(static_cast<const uint8_t*>(map_), size_, path);
}

equarx::Status GgufFile::OpenBytes(const uint8_t* data, size_t size) {
  if (size < 24) return equarx::InvalidArgument("memory: too small");
  return Parse(data, size, "memory");
}

equarx::Status GgufFile::Parse(const uint8_t* base, size_t size, const std::string& name) {
  Cursor c{base, size};
  char magic[4] = {};
  c.Take(magic, 4);
  if (std::memcmp(magic, "GGUF", 4) != 0) return equarx::InvalidArgument(name + ": not a GGUF file");
  version_ = c.Get<uint32_t>();
  if (version_ < 2 || version_ > 3) return equarx::Unsupported("unsupported GGUF version " + std::to_string(version_));
  uint64_t n_tensors = c.Get<uint64_t>();
  uint64_t n_kv = c.Get<uint64_t>();
  for (uint64_t k = 0; k < n_kv && c.ok; ++k) {
    std::string key = c.Str();
    uint32_t type = c.Get<uint32_t>();
    GgufValue v;
    if (!ReadValue(c, type, &v, 0)) return equarx::InvalidArgument("bad metadata value for " + key);
    kv_[key] = std::move(v);
  }
  if (n_tensors > size / 8) return equarx::InvalidArgument("implausible tensor count");
  tensors_.resize(n_tensors);
  for (auto& t : tensors_) {
    t.name = c.Str();
    uint32_t nd = c.Get<uint32_t>();
    if (nd > 4) return equarx::InvalidArgument("tensor " + t.name + ": too many dims");
    t.dims.resize(nd);
    for (auto& d : t.dims) d = c.Get<uint64_t>();
    t.type = c.Get<uint32_t>();
    t.offset = c.Get<uint64_t>();
  }
  if (!c.ok) return equarx::InvalidArgument(name + ": truncated header");
  uint64_t align = static_cast<uint64_t>(GetInt("general.alignment", 32));
  if (align == 0) align = 32;
  // Offsets and the alignment come from the file: every sum below is checked against the size
  // first, so none can wrap around (an offset near 2^64 did: found by fuzz/gguf_fuzz.cc).
  if (align > size)
    return equarx::InvalidArgument(name + ": alignment " + std::to_string(align) + " larger than the file");
  const size_t data_start = (c.pos + align - 1) / align * align;
  if (data_start > size) return equarx::InvalidArgument(name + ": data section starts past the end");
  for (size_t k = 0; k < tensors_.size(); ++k) {
    auto& t = tensors_[k];
    size_t be, bb;
    if (!GgmlTypeBlock(t.type, &be, &bb))
      return equarx::Unsupported("tensor " + t.name + ": unsupported type " + std::to_string(t.type));
    if (t.dims.empty() || t.dims[0] % be != 0) return equarx::InvalidArgument("tensor " + t.name + ": bad row size");
    // Neither the element count nor the byte size may wrap around 2^64: a hostile file's dims
    // would otherwise size the tensor smaller than they say (found by fuzz/gguf_fuzz.cc).
    uint64_t elements = 1, bytes = 0;
    bool overflow = false;
    for (uint64_t d : t.dims) overflow |= __builtin_mul_overflow(elements, d, &elements);
    overflow |= __builtin_mul_overflow(elements / be, uint64_t(bb), &bytes);
    if (overflow) return equarx::InvalidArgument("tensor " + t.name + ": size overflows");
    t.bytes = bytes;
    if (t.offset > size - data_start || t.bytes > size - data_start - t.offset)
      return equarx::InvalidArgument("tensor " + t.name + ": data outside the file");
    t.data = base + data_start + t.offset;
    index_[t.name] = k;
  }
  return equarx::Status::Ok();
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}
int64_t GgufFile::GetInt(const std::string& key, int64_t fallback) const {
  const GgufValue* v = Find(key);
  return v ? v->AsInt() : fallback;
}
double GgufFile::GetFloat(const std::string& key, double fallback) const {
  const GgufValue* v = Find(key);
  return v ? v->AsFloat() : fallback;
}
std::string GgufFile::GetString(const std::string& key, const std::string& fallback) const {
  const GgufValue* v = Find(key);
  return v && v->kind == GgufValue::kString ? v->s : fallback;
}
const GgufTensor* GgufFile::Tensor(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

// ---- writer ------------------------------------------------------------------------------
void GgufWriter::SetU32(const std::string& key, uint32_t v) {
  PutStr(kv_bytes_, key); Put<uint32_t>(kv_bytes_, kU32); Put(kv_bytes_, v); ++kv_count_;
}
void GgufWriter::SetF32(const std::string& key, float v) {
  PutStr(kv_bytes_, key); Put<uint32_t>(kv_bytes_, kF32v); Put(kv_bytes_, v); ++kv_count_;
}
void GgufWriter::SetBool(const std::string& key, bool v) {
  PutStr(kv_bytes_, key); Put<uint32_t>(kv_bytes_, kBoolv); Put<uint8_t>(kv_bytes_, v); ++kv_count_;
}
void GgufWriter::SetString(const std::string& key, const std::string& v) {
  PutStr(kv_bytes_, key); Put<uint32_t>(kv_bytes_, kStringv); PutStr(kv_bytes_, v); ++kv_count_;
}
void GgufWriter::SetStringArray(const std::string& key, const std::vector<std::string>& v) {
  PutStr(kv_bytes_, key); Put<uint32_t>(kv_bytes_, kArrayv); Put<uint32_t>(kv_bytes_, kStringv);
  Put<uint64_t>(kv_bytes_, v.size());
  for (const auto& s : v) PutStr(kv_bytes_, s);
  ++kv_count_;
}
void GgufWriter::SetF32Array(const std::string& key, const std::vector<float>& v) {
  PutStr(kv_bytes_, key); Put<uint32_t>(kv_bytes_, kArrayv); Put<uint32_t>(kv_bytes_, kF32v);
  Put<uint64_t>(kv_bytes_, v.size());
  for (float x : v) Put(kv_bytes_, x);
  ++kv_count_;
}
void GgufWriter::SetI32Array(const std::string& key, const std::vector<int32_t>& v) {
  PutStr(kv_bytes_, key); Put<uint32_t>(kv_bytes_, kArrayv); Put<uint32_t>(kv_bytes_, kI32);
  Put<uint64_t>(kv_bytes_, v.size());
  for (int32_t x : v) Put(kv_bytes_, x);
  ++kv_count_;
}
void GgufWriter::AddTensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                           std::vector<uint8_t> raw) {
  tensors_.push_back({name, std::move(dims), type, std::move(raw)});
}

equarx::Status GgufWriter::Write(const std::string& path) const {
  std::vector<uint8_t> out;
  Serialize(&out);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  if (!f) return equarx::IoError("cannot write " + path);
  return equarx::Status::Ok();
}

void GgufWriter::Serialize(std::vector<uint8_t>* image) const {
  constexpr uint64_t kAlign = 32;
  std::vector<uint8_t> out;
  PutBytes(out, "GGUF", 4);
  Put<uint32_t>(out, 3);
  Put<uint64_t>(out, tensors_.size());
  Put<uint64_t>(out, kv_count_);
  PutBytes(out, kv_bytes_.data(), kv_bytes_.size());
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    PutStr(out, t.name);
    Put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) Put(out, d);
    Put(out, t.type);
    Put(out, offset);
    offset += (t.raw.size() + kAlign - 1) / kAlign * kAlign;
  }
  out.resize((out.size() + kAlign - 1) / kAlign * kAlign, 0);
  for (const auto& t : tensors_) {
    PutBytes(out, t.raw.data(), t.raw.size());
    out.resize((out.size() + kAlign - 1) / kAlign * kAlign, 0);
  }
  *image = std::move(out);
}

}  // namespace gemma3
