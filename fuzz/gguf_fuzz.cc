// Fuzz harness: the GGUF reader (apps/gemma3/gguf.h) and, on what it accepts, the tokenizer
// loader and a short encode/decode. Beyond "no crash, no sanitizer report": every accepted
// tensor's data lies inside the image and holds exactly the bytes its dims and type need,
// and every token id the tokenizer produces is a valid index into its vocabulary.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "gguf.h"
#include "tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gemma3;
  // A private copy: the reader borrows the image, and libFuzzer's buffer is exactly `size`
  // bytes long, so any read past the end is caught.
  std::vector<uint8_t> image(data, data + size);
  GgufFile f;
  if (const equarx::Status st = f.OpenBytes(image.data(), image.size()); !st.ok()) {
    if (st.message().empty()) equarx::fuzz::Fail("rejected without a message");
    return 0;
  }
  for (const GgufTensor& t : f.tensors()) {
    size_t be = 0, bb = 0;
    if (!GgmlTypeBlock(t.type, &be, &bb)) equarx::fuzz::Fail("accepted a tensor of an unsupported type");
    if (t.data < image.data() || t.bytes > image.size() || size_t(t.data - image.data()) > image.size() - t.bytes)
      equarx::fuzz::Fail("tensor data outside the image");
    // The elements the dims describe must be what the bytes hold (dims[0] % be == 0 checked).
    unsigned __int128 elems = 1;
    for (uint64_t d : t.dims) elems *= d;
    if (elems / be * bb != t.bytes) equarx::fuzz::Fail("tensor bytes do not match its dims");
  }
  Tokenizer tok;
  if (!tok.Load(f).ok()) return 0;
  const std::string text = "Hello  world\n\tthe  end <0x41>\xE2\x96\x81\xF0\x9F\x98\x80";
  for (int32_t id : tok.Encode(text))
    if (id < 0 || size_t(id) >= tok.vocab_size()) equarx::fuzz::Fail("token id outside the vocabulary");
  (void)tok.Decode({0, 1, 2, -1, int32_t(tok.vocab_size()), 1 << 30});
  return 0;
}
