// equarx tools — .npy reader/writer (see npy.h).
//
// File layout: "\x93NUMPY", major, minor, header length (u16 LE for 1.x, u32 LE for 2.x/3.x),
// then an ASCII (3.0: UTF-8) Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (4096, 4096), }
// padded with spaces and a newline, then the raw C-order element bytes.
// The dict parser below is a small recursive-descent parser over a bounded string.
#include "npy.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

static_assert(std::endian::native == std::endian::little, "the .npy tools assume a little-endian host");

namespace equarx::tools {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kMaxDims = 64;

Status Bad(const std::string& name, const std::string& what) {
  return InvalidArgument(name + ": " + what);
}

// A value of the header dict: a string, a bool, or a tuple of non-negative integers.
struct Value {
  enum Kind { kString, kBool, kTuple, kList } kind = kString;
  std::string str;
  bool boolean = false;
  std::vector<size_t> ints;
};

class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  // Parses the whole dict; returns an error description or empty on success.
  std::string ParseDict(std::vector<std::pair<std::string, Value>>* items) {
    SkipSpace();
    if (!Eat('{')) return "header is not a dict (expected '{')";
    for (;;) {
      SkipSpace();
      if (Eat('}')) break;
      std::string key;
      if (std::string e = ParseString(&key); !e.empty()) return "bad dict key: " + e;
      SkipSpace();
      if (!Eat(':')) return "expected ':' after key '" + key + "'";
      SkipSpace();
      Value v;
      if (std::string e = ParseValue(&v); !e.empty()) return "bad value for '" + key + "': " + e;
      items->emplace_back(std::move(key), std::move(v));
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat('}')) break;
      return "expected ',' or '}' in header dict";
    }
    SkipSpace();
    if (pos_ != s_.size()) return "unexpected characters after the header dict";
    return {};
  }

 private:
  bool AtEnd() const { return pos_ >= s_.size(); }
  bool Eat(char c) {
    if (!AtEnd() && s_[pos_] == c) { ++pos_; return true; }
    return false;
  }
  void SkipSpace() {
    while (!AtEnd() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool EatWord(std::string_view w) {
    if (s_.substr(pos_, w.size()) == w) { pos_ += w.size(); return true; }
    return false;
  }

  std::string ParseString(std::string* out) {
    if (AtEnd() || (s_[pos_] != '\'' && s_[pos_] != '"')) return "expected a quoted string";
    const char quote = s_[pos_++];
    while (!AtEnd() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') return "escape sequences are not supported";
      out->push_back(s_[pos_++]);
    }
    if (!Eat(quote)) return "unterminated string";
    return {};
  }

  std::string ParseValue(Value* v) {
    if (AtEnd()) return "missing value";
    const char c = s_[pos_];
    if (c == '\'' || c == '"') { v->kind = Value::kString; return ParseString(&v->str); }
    if (EatWord("True")) { v->kind = Value::kBool; v->boolean = true; return {}; }
    if (EatWord("False")) { v->kind = Value::kBool; v->boolean = false; return {}; }
    if (c == '[') { v->kind = Value::kList; return SkipBracketed('[', ']'); }
    if (c == '(') { v->kind = Value::kTuple; return ParseIntTuple(&v->ints); }
    return "unsupported value syntax";
  }

  // Skips a (possibly nested) bracketed literal such as a structured dtype's field list.
  std::string SkipBracketed(char open, char close) {
    int depth = 0;
    while (!AtEnd()) {
      const char c = s_[pos_];
      if (c == '\'' || c == '"') {
        std::string ignored;
        if (std::string e = ParseString(&ignored); !e.empty()) return e;
        continue;
      }
      ++pos_;
      if (c == open) ++depth;
      if (c == close && --depth == 0) return {};
      if (depth > 64) return "nesting too deep";
    }
    return "unterminated bracket";
  }

  std::string ParseIntTuple(std::vector<size_t>* ints) {
    if (!Eat('(')) return "expected '('";
    for (;;) {
      SkipSpace();
      if (Eat(')')) return {};
      if (ints->size() >= kMaxDims) return "too many dimensions";
      if (AtEnd() || s_[pos_] < '0' || s_[pos_] > '9') return "shape entries must be non-negative integers";
      size_t n = 0;
      while (!AtEnd() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        const size_t d = size_t(s_[pos_++] - '0');
        if (n > (std::numeric_limits<size_t>::max() - d) / 10) return "shape entry overflows";
        n = n * 10 + d;
      }
      if (Eat('L')) {}  // Python 2 long suffix
      ints->push_back(n);
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat(')')) {
        return {};
      }
      return "expected ',' or ')' in shape";
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

uint32_t ReadLE(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

const char* NpyDTypeName(NpyDType t) { return t == NpyDType::kFloat32 ? "float32" : "float16"; }
size_t NpyDTypeSize(NpyDType t) { return t == NpyDType::kFloat32 ? 4 : 2; }

size_t NpyArray::count() const {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const std::vector<size_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

Status ParseNpy(const uint8_t* bytes, size_t size, const std::string& name, NpyArray* out) {
  if (size < kMagicLen + 2 || std::memcmp(bytes, kMagic, kMagicLen) != 0)
    return Bad(name, "not a .npy file (bad magic; expected \\x93NUMPY)");
  const int major = bytes[6], minor = bytes[7];
  size_t len_bytes;
  if (major == 1) len_bytes = 2;
  else if (major == 2 || major == 3) len_bytes = 4;
  else
    return Bad(name, "unsupported .npy format version " + std::to_string(major) + "." +
                         std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  if (minor != 0)
    return Bad(name, "unsupported .npy format version " + std::to_string(major) + "." +
                         std::to_string(minor));
  const size_t preamble = kMagicLen + 2 + len_bytes;
  if (size < preamble) return Bad(name, "truncated .npy header");
  const size_t header_len = ReadLE(bytes + kMagicLen + 2, len_bytes);
  if (header_len > size - preamble)
    return Bad(name, "truncated .npy header (header length " + std::to_string(header_len) +
                         " exceeds the file)");
  const std::string_view header(reinterpret_cast<const char*>(bytes + preamble), header_len);

  std::vector<std::pair<std::string, Value>> items;
  if (std::string e = HeaderParser(header).ParseDict(&items); !e.empty())
    return Bad(name, "malformed .npy header: " + e);
  const Value* descr = nullptr;
  const Value* fortran = nullptr;
  const Value* shape = nullptr;
  for (const auto& [key, value] : items) {
    const Value** slot = key == "descr" ? &descr : key == "fortran_order" ? &fortran
                         : key == "shape" ? &shape : nullptr;
    if (!slot) return Bad(name, "malformed .npy header: unexpected key '" + key + "'");
    if (*slot) return Bad(name, "malformed .npy header: duplicate key '" + key + "'");
    *slot = &value;
  }
  if (!descr || !fortran || !shape)
    return Bad(name, "malformed .npy header: needs keys 'descr', 'fortran_order' and 'shape'");
  if (descr->kind != Value::kString)
    return Bad(name, "unsupported dtype: structured dtypes are not supported (need '<f4' or '<f2')");
  NpyDType dtype;
  if (descr->str == "<f4") dtype = NpyDType::kFloat32;
  else if (descr->str == "<f2") dtype = NpyDType::kFloat16;
  else
    return Bad(name, "unsupported dtype '" + descr->str +
                         "' (supported: '<f4' little-endian float32, '<f2' little-endian float16)");
  if (fortran->kind != Value::kBool)
    return Bad(name, "malformed .npy header: 'fortran_order' must be True or False");
  if (fortran->boolean)
    return Bad(name, "fortran_order=True arrays are not supported (save with C order)");
  if (shape->kind != Value::kTuple)
    return Bad(name, "malformed .npy header: 'shape' must be a tuple of integers");

  const size_t esize = NpyDTypeSize(dtype);
  size_t count = 1;
  for (size_t d : shape->ints) {
    if (d != 0 && count > std::numeric_limits<size_t>::max() / esize / d)
      return Bad(name, "shape " + ShapeString(shape->ints) + " is too large");
    count *= d;
  }
  const size_t need = count * esize;
  const size_t have = size - preamble - header_len;
  if (have < need)
    return Bad(name, "truncated data: shape " + ShapeString(shape->ints) + " of " +
                         NpyDTypeName(dtype) + " needs " + std::to_string(need) +
                         " bytes, the file has " + std::to_string(have));
  if (have > need)
    return Bad(name, "size mismatch: shape " + ShapeString(shape->ints) + " of " +
                         NpyDTypeName(dtype) + " needs " + std::to_string(need) +
                         " bytes, the file has " + std::to_string(have) + " (trailing data)");

  out->dtype = dtype;
  out->shape = shape->ints;
  out->f32.clear();
  out->f16.clear();
  const uint8_t* data = bytes + preamble + header_len;
  if (dtype == NpyDType::kFloat32) {
    out->f32.resize(count);
    if (need) std::memcpy(out->f32.data(), data, need);
  } else {
    out->f16.resize(count);
    if (need) std::memcpy(out->f16.data(), data, need);
  }
  return Status::Ok();
}

Status ReadNpy(const std::string& path, NpyArray* out) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return IoError(path + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec)) return IoError(path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open for reading");
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0) return IoError(path + ": cannot determine the file size");
  in.seekg(0, std::ios::beg);
  std::vector<uint8_t> bytes(static_cast<size_t>(end));
  if (!bytes.empty() && !in.read(reinterpret_cast<char*>(bytes.data()), end))
    return IoError(path + ": read failed");
  return ParseNpy(bytes.data(), bytes.size(), path, out);
}

Status SerializeNpy(const NpyArray& array, std::vector<uint8_t>* out) {
  const size_t count = array.count();
  const size_t have = array.dtype == NpyDType::kFloat32 ? array.f32.size() : array.f16.size();
  if (have != count)
    return InvalidArgument("array holds " + std::to_string(have) + " elements but its shape " +
                           ShapeString(array.shape) + " needs " + std::to_string(count));
  std::string header = std::string("{'descr': '") +
                       (array.dtype == NpyDType::kFloat32 ? "<f4" : "<f2") +
                       "', 'fortran_order': False, 'shape': " + ShapeString(array.shape) + ", }";
  // Version 1.0 unless the header needs more than a 16-bit length.
  const bool v2 = header.size() + 1 + 10 + 64 > 65535;
  const size_t preamble = v2 ? 12 : 10;
  const size_t total = preamble + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  const size_t esize = NpyDTypeSize(array.dtype);
  out->clear();
  out->reserve(preamble + header.size() + count * esize);
  out->insert(out->end(), kMagic, kMagic + kMagicLen);
  out->push_back(v2 ? 2 : 1);
  out->push_back(0);
  const size_t hl = header.size();
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out->push_back(uint8_t((hl >> (8 * i)) & 0xFF));
  out->insert(out->end(), header.begin(), header.end());
  const uint8_t* data = array.dtype == NpyDType::kFloat32
                            ? reinterpret_cast<const uint8_t*>(array.f32.data())
                            : reinterpret_cast<const uint8_t*>(array.f16.data());
  if (count) out->insert(out->end(), data, data + count * esize);
  return Status::Ok();
}

Status WriteNpy(const std::string& path, const NpyArray& array) {
  std::vector<uint8_t> bytes;
  if (Status s = SerializeNpy(array, &bytes); !s.ok())
    return Status(s.code(), path + ": " + s.message());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return IoError(path + ": cannot open for writing");
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  f.close();
  if (!f) return IoError(path + ": write failed");
  return Status::Ok();
}

}  // namespace equarx::tools
