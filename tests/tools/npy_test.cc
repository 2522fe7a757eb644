// tests/tools — .npy reader/writer: round trips and every malformed-file case must give a
// clear error (never a crash). Bad files are written into a per-test temp directory.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "npy.h"
#include "temp_dir.h"

namespace equarx::tools {
namespace {

namespace fs = std::filesystem;

class NpyTest : public TempDirTest {
 protected:
  NpyTest() : TempDirTest("equarx_npy_test_") {}

  std::string WriteRaw(const std::string& name, const std::string& bytes) {
    const std::string p = Path(name);
    std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return p;
  }
  // A complete v1.0 file image with the given header dict and data bytes.
  static std::string Image(const std::string& dict, size_t data_bytes, int major = 1) {
    std::string h = dict;
    const size_t pre = major == 1 ? 10 : 12;
    h.append((64 - (pre + h.size() + 1) % 64) % 64, ' ');
    h.push_back('\n');
    std::string out = std::string("\x93NUMPY", 6);
    out.push_back(char(major));
    out.push_back(0);
    const size_t len = h.size();
    out.push_back(char(len & 0xFF));
    out.push_back(char((len >> 8) & 0xFF));
    if (major != 1) { out.push_back(0); out.push_back(0); }
    out += h;
    out.append(data_bytes, '\0');
    return out;
  }
  Status ReadImage(const std::string& name, const std::string& bytes, NpyArray* a = nullptr) {
    NpyArray tmp;
    return ReadNpy(WriteRaw(name, bytes), a ? a : &tmp);
  }
  // The serialized image of an f32 array of `shape`, every element `value`.
  static void F32Image(const std::vector<size_t>& shape, float value, std::vector<uint8_t>* img) {
    NpyArray a;
    a.shape = shape;
    a.f32.assign(a.count(), value);
    ASSERT_TRUE(SerializeNpy(a, img).ok());
  }
};

TEST_F(NpyTest, RoundTripF32AnyShape) {
  for (const std::vector<size_t>& shape :
       {std::vector<size_t>{}, {0}, {1}, {7}, {3, 5}, {2, 3, 4}, {1, 1, 1, 1, 9}}) {
    NpyArray a;
    a.dtype = NpyDType::kFloat32;
    a.shape = shape;
    for (size_t i = 0; i < a.count(); ++i) a.f32.push_back(float(i) * 0.25f - 3.0f);
    const std::string p = (dir_ / "a.npy").string();
    ASSERT_TRUE(WriteNpy(p, a).ok());
    NpyArray b;
    Status s = ReadNpy(p, &b);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(b.dtype, NpyDType::kFloat32);
    EXPECT_EQ(b.shape, shape);
    EXPECT_EQ(b.f32, a.f32);
    EXPECT_EQ((fs::file_size(p) - a.count() * 4) % 64, 0u) << "header padded to 64 bytes";
  }
}

TEST_F(NpyTest, RoundTripF16) {
  NpyArray a;
  a.dtype = NpyDType::kFloat16;
  a.shape = {4, 4};
  for (uint16_t i = 0; i < 16; ++i) a.f16.push_back(uint16_t(0x3C00 + i * 97));
  std::vector<uint8_t> img;
  ASSERT_TRUE(SerializeNpy(a, &img).ok());
  const std::string text(img.begin(), img.end());
  EXPECT_NE(text.find("'descr': '<f2'"), std::string::npos);
  EXPECT_NE(text.find("'shape': (4, 4)"), std::string::npos);
  EXPECT_EQ(img[6], 1);
  EXPECT_EQ(img[7], 0);
  NpyArray b;
  ASSERT_TRUE(ParseNpy(img.data(), img.size(), "mem", &b).ok());
  EXPECT_EQ(b.dtype, NpyDType::kFloat16);
  EXPECT_EQ(b.f16, a.f16);
}

TEST_F(NpyTest, ReadsVersions2And3AndNumpySpellings) {
  NpyArray a;
  for (int major : {2, 3}) {
    Status s = ReadImage("v.npy", Image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, major), &a);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(a.shape, (std::vector<size_t>{2, 3}));
  }
  // Double quotes, no trailing comma, other key order, 1-tuple.
  Status s = ReadImage("q.npy", Image("{\"shape\": (5,), \"fortran_order\": False, \"descr\": \"<f2\"}", 10), &a);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(a.shape, std::vector<size_t>{5});
  EXPECT_EQ(a.dtype, NpyDType::kFloat16);
}

struct BadCase {
  const char* what;
  std::string bytes;
  const char* expect;  // substring of the message
};

TEST_F(NpyTest, MalformedFilesGiveClearErrors) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  std::string bad_version = Image(ok_dict, 16);
  bad_version[6] = 9;
  std::string bad_minor = Image(ok_dict, 16);
  bad_minor[7] = 5;
  std::string huge_len = Image(ok_dict, 16);
  huge_len[8] = char(0xFF);
  huge_len[9] = char(0xFF);
  const std::vector<BadCase> cases = {
      {"empty", "", "bad magic"},
      {"bad magic", "PK\x03\x04 this is a zip file, not npy", "bad magic"},
      {"magic only", std::string("\x93NUMPY", 6), "bad magic"},
      {"version 9", bad_version, "unsupported .npy format version 9"},
      {"minor 5", bad_minor, "unsupported .npy format version 1.5"},
      {"header length past end", huge_len, "truncated .npy header"},
      {"preamble cut", Image(ok_dict, 16).substr(0, 9), "truncated"},
      {"not a dict", Image("['descr', '<f4']", 16), "malformed"},
      {"unterminated dict", Image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)", 16), "malformed"},
      {"unterminated string", Image("{'descr: '<f4}", 16), "malformed"},
      {"missing key", Image("{'descr': '<f4', 'shape': (2, 2)}", 16), "needs keys"},
      {"duplicate key", Image("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", 16), "duplicate"},
      {"unknown key", Image("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", 16), "malformed"},
      {"negative dim", Image("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 2)}", 16), "non-negative"},
      {"dim overflow", Image("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}", 16), "overflow"},
      {"shape product overflow", Image("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 16), "too large"},
      {"shape not tuple", Image("{'descr': '<f4', 'fortran_order': False, 'shape': 'big'}", 16), "tuple"},
      {"fortran not bool", Image("{'descr': '<f4', 'fortran_order': 'no', 'shape': (4,)}", 16), "True or False"},
      {"f8", Image("{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", 16), "unsupported dtype '<f8'"},
      {"big endian", Image("{'descr': '>f4', 'fortran_order': False, 'shape': (4,)}", 16), "unsupported dtype '>f4'"},
      {"u1", Image("{'descr': '|u1', 'fortran_order': False, 'shape': (16,)}", 16), "unsupported dtype '|u1'"},
      {"structured", Image("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (2,)}", 16), "structured"},
      {"fortran order", Image("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2)}", 16), "fortran_order"},
      {"truncated data", Image(ok_dict, 15), "truncated data"},
      {"no data", Image(ok_dict, 0), "truncated data"},
      {"trailing data", Image(ok_dict, 17), "size mismatch"},
      {"deep nesting", Image("{'descr': " + std::string(200, '[') + ", 'fortran_order': False, 'shape': (2,)}", 16), "malformed"},
  };
  int i = 0;
  for (const BadCase& c : cases) {
    const std::string name = "bad" + std::to_string(i++) + ".npy";
    NpyArray a;
    Status s = ReadImage(name, c.bytes, &a);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << c.what << ": " << s.message();
    EXPECT_NE(s.message().find(name), std::string::npos) << c.what << ": message names the file";
  }
}

TEST_F(NpyTest, EveryPrefixOfAValidFileIsRejectedNotCrashed) {
  std::vector<uint8_t> img;
  ASSERT_NO_FATAL_FAILURE(F32Image({3, 3}, 1.5f, &img));
  for (size_t n = 0; n < img.size(); ++n) {
    NpyArray b;
    EXPECT_FALSE(ParseNpy(img.data(), n, "prefix", &b).ok()) << n;
  }
}

TEST_F(NpyTest, RandomByteFlipsNeverCrash) {
  std::vector<uint8_t> img;
  ASSERT_NO_FATAL_FAILURE(F32Image({4, 4}, 2.0f, &img));
  uint64_t x = 12345;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<uint8_t> m = img;
    for (int k = 0; k < 3; ++k) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      m[(x >> 33) % 128] = uint8_t(x >> 13);
    }
    NpyArray b;
    Status s = ParseNpy(m.data(), m.size(), "fuzz", &b);
    if (s.ok()) {
      EXPECT_LE(b.count() * NpyDTypeSize(b.dtype), m.size());
    }
  }
}

TEST_F(NpyTest, MissingFileAndDirectoryAreIoErrors) {
  NpyArray a;
  Status s = ReadNpy((dir_ / "nope.npy").string(), &a);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("nope.npy"), std::string::npos);
  s = ReadNpy(dir_.string(), &a);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  a.f32 = {1.0f};
  s = WriteNpy((dir_ / "no_such_dir" / "x.npy").string(), a);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
}

TEST_F(NpyTest, WriterRejectsInconsistentArray) {
  NpyArray a;
  a.shape = {3};
  a.f32 = {1, 2};
  std::vector<uint8_t> img;
  EXPECT_EQ(SerializeNpy(a, &img).code(), StatusCode::kInvalidArgument);
}

TEST(ShapeString, NumpySpelling) {
  EXPECT_EQ(ShapeString({}), "()");
  EXPECT_EQ(ShapeString({7}), "(7,)");
  EXPECT_EQ(ShapeString({4096, 4096}), "(4096, 4096)");
}

}  // namespace
}  // namespace equarx::tools
