// Fuzz harness: the Gemma 3 tokenizer (apps/gemma3/tokenizer.h) on a fuzzed vocabulary and a
// fuzzed text. The vocabulary is written into a GGUF image (GgufWriter) and read back, as the
// app does with a model file.
//
// Input: [pieces u8][bos u16][unk u16][flags u8] then for each piece [type u8][score i8]
// [length u8][bytes...], then the text. Invariants: every id Encode returns is a valid index
// into the vocabulary (the model's embedding lookup trusts it), and Decode of any ids is safe.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "gguf.h"
#include "tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gemma3;
  equarx::fuzz::Input in(data, size);
  const int n = in.Take<uint8_t>();
  const int bos = in.Take<uint16_t>() % 300, unk = in.Take<uint16_t>() % 300;
  const uint8_t flags = in.Take<uint8_t>();
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int k = 0; k < n && in.remaining(); ++k) {
    types.push_back(in.Take<uint8_t>() % 8);
    scores.push_back(float(in.Take<int8_t>()));
    const size_t len = in.Take<uint8_t>() % 16;
    std::string p;
    for (size_t j = 0; j < len && in.remaining(); ++j) p += char(in.Take<uint8_t>());
    pieces.push_back(p);
  }
  GgufWriter w;
  w.SetStringArray("tokenizer.ggml.tokens", pieces);
  if (flags & 1) w.SetF32Array("tokenizer.ggml.scores", scores);
  if (flags & 2) w.SetI32Array("tokenizer.ggml.token_type", types);
  w.SetString("tokenizer.ggml.model", "llama");
  if (flags & 4) w.SetU32("tokenizer.ggml.bos_token_id", uint32_t(bos));
  if (flags & 8) w.SetU32("tokenizer.ggml.unknown_token_id", uint32_t(unk));
  w.SetBool("tokenizer.ggml.add_bos_token", flags & 16);
  w.SetBool("tokenizer.ggml.add_space_prefix", flags & 32);
  std::vector<uint8_t> image;
  w.Serialize(&image);
  GgufFile f;
  if (!f.OpenBytes(image.data(), image.size()).ok()) equarx::fuzz::Fail("the writer's image does not read back");
  Tokenizer tok;
  if (!tok.Load(f).ok()) return 0;
  const std::string text = in.RestAsString();
  const std::vector<int32_t> ids = tok.Encode(text, flags & 64);
  for (int32_t id : ids)
    if (id < 0 || size_t(id) >= tok.vocab_size()) equarx::fuzz::Fail("token id outside the vocabulary");
  (void)tok.Decode(ids);
  return 0;
}
