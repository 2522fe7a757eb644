// synthetic.h — writes a tiny random Gemma 3 GGUF for tests: every tensor type the loader
// supports appears, the layer pattern includes local and global layers, and the vocabulary
// has normal, user-defined, control and byte pieces.
#pragma once

#include <string>

#include "equarx/status.h"

namespace gemma3::testing {

struct SyntheticSpec {
  int d_model = 128, layers = 3, d_ff = 512, heads = 4, kv_heads = 2, head_dim = 64;
  int swa_pattern = 3, window = 5;
  unsigned seed = 1;
  /// An output projection of its own (output.weight) instead of the tied embedding. With the
  /// tied one, a random model's next token is mostly the token it was fed (an embedding is most
  /// like itself), so greedy decode repeats one token.
  bool untied_output = false;
};

/// Writes the model to `path` (GgufWriter::Write's status).
equarx::Status WriteSyntheticModel(const std::string& path, const SyntheticSpec& spec);

/// Pieces of the synthetic vocabulary (index = token id).
const char* const* SyntheticPieces(int* n);

}  // namespace gemma3::testing
