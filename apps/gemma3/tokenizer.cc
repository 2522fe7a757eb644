// tokenizer.cc — SentencePiece BPE: the text is cut at user-defined pieces (longest match
// first); each remaining fragment, spaces mapped to U+2581, starts as one symbol per UTF-8
// character, and the adjacent pair whose concatenation is a piece with the highest score is
// merged (ties: leftmost) until no pair is a piece. Symbols that are not pieces become their
// UTF-8 bytes as <0xXX> tokens. A max-heap over candidate pairs makes it O(n log n).
#include "tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <queue>

namespace gemma3 {
namespace {

constexpr int kTypeNormal = 1, kTypeUnknown = 2, kTypeControl = 3, kTypeUserDefined = 4,
              kTypeByte = 6;

size_t Utf8Len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 6) return 2;
  if ((c >> 4) == 14) return 3;
  if ((c >> 3) == 30) return 4;
  return 1;
}

const std::string kSpace = "\xE2\x96\x81";  // U+2581

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

equarx::Status Tokenizer::Load(const GgufFile& file) {
  const GgufValue* tokens = file.Find("tokenizer.ggml.tokens");
  const GgufValue* scores = file.Find("tokenizer.ggml.scores");
  const GgufValue* types = file.Find("tokenizer.ggml.token_type");
  if (!tokens || tokens->kind != GgufValue::kArray) return equarx::InvalidArgument("no tokenizer.ggml.tokens");
  std::string model = file.GetString("tokenizer.ggml.model", "llama");
  if (model != "llama") return equarx::Unsupported("unsupported tokenizer model " + model);
  size_t n = tokens->arr.size();
  pieces_.resize(n);
  scores_.assign(n, 0.f);
  types_.assign(n, kTypeNormal);
  for (size_t k = 0; k < n; ++k) {
    pieces_[k] = tokens->arr[k].s;
    if (scores && k < scores->arr.size()) scores_[k] = static_cast<float>(scores->arr[k].AsFloat());
    if (types && k < types->arr.size()) types_[k] = static_cast<int32_t>(types->arr[k].AsInt());
  }
  for (int b = 0; b < 256; ++b) byte_token_[b] = -1;
  for (size_t k = 0; k < n; ++k) {
    const std::string& p = pieces_[k];
    if (types_[k] == kTypeByte && p.size() == 6 && p.rfind("<0x", 0) == 0) {
      // Exactly two hex digits (sscanf's %2x also took a sign: "<0x-4>" indexed byte_token_[-4];
      // found by fuzz/tokenizer_fuzz.cc).
      const int hi = HexDigit(p[3]), lo = HexDigit(p[4]);
      if (hi >= 0 && lo >= 0 && p[5] == '>') byte_token_[hi * 16 + lo] = static_cast<int32_t>(k);
      continue;
    }
    if (types_[k] == kTypeNormal || types_[k] == kTypeUserDefined || types_[k] == kTypeUnknown)
      lookup_.emplace(p, static_cast<int32_t>(k));
    if (types_[k] == kTypeUserDefined && !p.empty()) user_defined_.push_back(p);
  }
  std::sort(user_defined_.begin(), user_defined_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  // Ids named by the file must index the vocabulary (the model's embedding lookup and the
  // evaluation's targets trust Encode's output), and every byte must be encodable: by its
  // <0xXX> piece or else by the unknown token.
  const int64_t bos = file.GetInt("tokenizer.ggml.bos_token_id", -1);
  const int64_t unk = file.GetInt("tokenizer.ggml.unknown_token_id", -1);
  for (const auto& [name, id] : {std::pair{"bos", bos}, std::pair{"unknown", unk}})
    if (id < -1 || id >= static_cast<int64_t>(n))
      return equarx::InvalidArgument(std::string("tokenizer ") + name + " token id " + std::to_string(id) +
                                     " is outside the vocabulary of " + std::to_string(n) + " pieces");
  bos_ = static_cast<int32_t>(bos);
  unk_ = static_cast<int32_t>(unk);
  if (unk_ < 0)
    for (int b = 0; b < 256; ++b)
      if (byte_token_[b] < 0)
        return equarx::InvalidArgument("tokenizer has no <0x" + std::string(1, "0123456789ABCDEF"[b >> 4]) +
                                       "0123456789ABCDEF"[b & 15] + "> piece and no unknown token: byte " +
                                       std::to_string(b) + " cannot be encoded");
  const GgufValue* ab = file.Find("tokenizer.ggml.add_bos_token");
  add_bos_ = ab ? ab->AsInt() != 0 : true;
  const GgufValue* asp = file.Find("tokenizer.ggml.add_space_prefix");
  add_space_prefix_ = asp ? asp->AsInt() != 0 : false;
  return equarx::Status::Ok();
}

std::vector<int32_t> Tokenizer::Encode(const std::string& text, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos && add_bos_ && bos_ >= 0) out.push_back(bos_);
  // User-defined pieces (newline runs, space runs, tabs, markup) are matched on the raw
  // text, before spaces become U+2581, as llama.cpp does; the fragments between them are
  // escaped and go through BPE.
  const std::string norm = add_space_prefix_ ? " " + text : text;
  std::string frag;
  auto flush = [&] {
    std::string esc;
    esc.reserve(frag.size() * 3);
    for (char c : frag) {
      if (c == ' ') esc += kSpace; else esc += c;
    }
    EncodeFragment(esc, &out);
    frag.clear();
  };
  size_t i = 0;
  while (i < norm.size()) {
    const std::string* hit = nullptr;
    for (const auto& u : user_defined_) {
      if (u.size() <= norm.size() - i && norm.compare(i, u.size(), u) == 0) { hit = &u; break; }
    }
    if (hit) {
      flush();
      out.push_back(lookup_.at(*hit));
      i += hit->size();
    } else {
      size_t len = std::min(Utf8Len(static_cast<unsigned char>(norm[i])), norm.size() - i);
      frag.append(norm, i, len);
      i += len;
    }
  }
  flush();
  return out;
}

void Tokenizer::EncodeFragment(const std::string& text, std::vector<int32_t>* out) const {
  if (text.empty()) return;
  struct Sym { size_t start, len; int prev, next; };
  std::vector<Sym> sym;
  for (size_t i = 0; i < text.size();) {
    size_t len = std::min(Utf8Len(static_cast<unsigned char>(text[i])), text.size() - i);
    int idx = static_cast<int>(sym.size());
    sym.push_back({i, len, idx - 1, idx + 1});
    i += len;
  }
  sym.back().next = -1;
  struct Cand { float score; int left, right; size_t len; };  // right+len detect stale entries
  auto worse = [](const Cand& a, const Cand& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Cand, std::vector<Cand>, decltype(worse)> heap(worse);
  auto try_pair = [&](int l) {
    if (l < 0 || sym[l].next < 0) return;
    const Sym& a = sym[l];
    const Sym& b = sym[a.next];
    auto it = lookup_.find(text.substr(a.start, a.len + b.len));
    if (it == lookup_.end() || types_[it->second] != kTypeNormal) return;
    heap.push({scores_[it->second], l, a.next, a.len + b.len});
  };
  for (int k = 0; k + 1 < static_cast<int>(sym.size()); ++k) try_pair(k);
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    Sym& a = sym[c.left];
    if (a.len == 0 || a.next != c.right || a.len + sym[a.next].len != c.len) continue;  // stale
    Sym& b = sym[a.next];
    a.len += b.len;
    b.len = 0;
    a.next = b.next;
    if (a.next >= 0) sym[a.next].prev = c.left;
    try_pair(a.prev);
    try_pair(c.left);
  }
  for (int k = 0; k >= 0; k = sym[k].next) {
    const Sym& s = sym[k];
    auto it = lookup_.find(text.substr(s.start, s.len));
    if (it != lookup_.end()) {
      out->push_back(it->second);
      continue;
    }
    for (size_t j = 0; j < s.len; ++j) {
      int32_t t = byte_token_[static_cast<unsigned char>(text[s.start + j])];
      out->push_back(t >= 0 ? t : unk_);
    }
  }
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) continue;
    int t = types_[static_cast<size_t>(id)];
    if (t == kTypeControl) continue;
    if (t == kTypeByte) {
      for (int b = 0; b < 256; ++b)
        if (byte_token_[b] == id) out += static_cast<char>(b);
      continue;
    }
    const std::string& p = pieces_[static_cast<size_t>(id)];
    for (size_t i = 0; i < p.size();) {
      if (p.compare(i, 3, kSpace) == 0) { out += ' '; i += 3; } else { out += p[i++]; }
    }
  }
  return out;
}

}  // namespace gemma3
