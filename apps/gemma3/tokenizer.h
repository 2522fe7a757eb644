// tokenizer.h — the SentencePiece-style tokenizer stored in GGUF metadata
// (tokenizer.ggml.model = "llama": scored pieces, BPE by highest merged-piece score, byte
// fallback <0xXX>), as Gemma 3 uses it: user-defined pieces (newline, space and tab runs,
// markup) matched first on the raw text as atomic symbols, then spaces become U+2581 (no
// prefix space) for BPE; BOS prepended.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "gguf.h"

namespace gemma3 {

class Tokenizer {
 public:
  equarx::Status Load(const GgufFile& file);
  /// Encodes UTF-8 text; prepends BOS when `add_bos` (and the model asks for it).
  std::vector<int32_t> Encode(const std::string& text, bool add_bos = true) const;
  std::string Decode(const std::vector<int32_t>& ids) const;
  size_t vocab_size() const { return pieces_.size(); }
  int32_t bos() const { return bos_; }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }

 private:
  void EncodeFragment(const std::string& text, std::vector<int32_t>* out) const;
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<int32_t> types_;
  std::unordered_map<std::string, int32_t> lookup_;
  std::vector<std::string> user_defined_;  // sorted longest first
  int32_t byte_token_[256] = {};
  int32_t bos_ = -1, unk_ = -1;
  bool add_bos_ = true, add_space_prefix_ = false;
};

}  // namespace gemma3
