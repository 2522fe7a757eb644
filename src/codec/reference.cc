// equarx codec — the scalar reference: the executable specification of every wire format.
//
// Plain C++ (no SIMD), written for clarity rather than speed. Every dispatched SIMD kernel
// (int8_block.cc, raw.cc) must produce bitwise identical bytes and values; the tests in
// tests/codec compare them on every target. docs/wire_format.md is the prose version.
//
// Conventions that make the bytes well defined:
//   * f32 arithmetic only, multiplies and adds never fused (-ffp-contract=off), default
//     rounding mode (round to nearest even) and no flush-to-zero.
//   * f32 -> bf16 / f16 / e5m2 round to nearest even with integer arithmetic on the bit
//     pattern (no dependence on the host's conversion instructions); NaN becomes the
//     canonical quiet NaN of the narrow type (bf16 0x7FC0, f16 0x7E00, e5m2 0x7F).
//   * Narrow -> f32 is exact: the bit pattern is widened (NaN payloads shifted, not quieted).
//   * A conversion between identical types is a bit copy.
//   * Sums f32(local) + decoded that are NaN are stored as the canonical f32 NaN 0x7FC00000
//     (which NaN payload an add returns depends on the operand order a compiler picks).
//
// The per-block helpers of reference_block.cc are also called by the SIMD kernels for the
// rare blocks that hold NaN/Inf, so those blocks are identical by definition.
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>

#include "codec/codec.h"
#include "codec/internal.h"

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; a big-endian port must byte-swap scales");

namespace equarx::codec {

namespace {

uint32_t BitsOf(float f) { return std::bit_cast<uint32_t>(f); }
float FloatOf(uint32_t u) { return std::bit_cast<float>(u); }

constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr uint32_t kF32QuietNaN = 0x7FC00000u;

uint32_t RoundToE5(uint32_t abs, int mbits) { return internal::RoundToNarrow(abs, 15, mbits, 31); }


size_t RawElemBytes(Format f) {
  switch (f) {
    case Format::kRawF32: return 4;
    case Format::kRawBF16:
    case Format::kRawF16: return 2;
    default: return 1;
  }
}

// Raw wire element i as f32 (exact).
float LoadRaw(Format f, const uint8_t* w, size_t i) {
  switch (f) {
    case Format::kRawF32: {
      float v;
      std::memcpy(&v, w + 4 * i, 4);
      return v;
    }
    case Format::kRawBF16: {
      uint16_t h;
      std::memcpy(&h, w + 2 * i, 2);
      return ref::BF16ToF32(h);
    }
    case Format::kRawF16: {
      uint16_t h;
      std::memcpy(&h, w + 2 * i, 2);
      return ref::F16ToF32(h);
    }
    case Format::kRawE5M2: return ref::E5M2ToF32(w[i]);
    default: break;
  }
  assert(false);
  return 0.0f;
}

// Stores f32 x as raw wire element i (rounding to nearest even).
void StoreRaw(Format f, float x, uint8_t* w, size_t i) {
  switch (f) {
    case Format::kRawF32: std::memcpy(w + 4 * i, &x, 4); return;
    case Format::kRawBF16: {
      const uint16_t h = ref::F32ToBF16(x);
      std::memcpy(w + 2 * i, &h, 2);
      return;
    }
    case Format::kRawF16: {
      const uint16_t h = ref::F32ToF16(x);
      std::memcpy(w + 2 * i, &h, 2);
      return;
    }
    case Format::kRawE5M2: w[i] = ref::F32ToE5M2(x); return;
    default: break;
  }
  assert(false);
}

void StoreAs(DType t, float x, void* p, size_t i) {
  switch (t) {
    case DType::kFloat32: static_cast<float*>(p)[i] = x; return;
    case DType::kBFloat16: static_cast<uint16_t*>(p)[i] = ref::F32ToBF16(x); return;
    case DType::kFloat16: static_cast<uint16_t*>(p)[i] = ref::F32ToF16(x); return;
  }
}

// The dtype a raw format carries, if it is one of the caller dtypes.
bool RawIsDType(Format f, DType t) { return RawFormatOf(t) == f; }

// f32(local) + decoded: one f32 add; a NaN sum is stored as the canonical 0x7FC00000 (the
// payload of NaN + NaN depends on operand order, which C++ compilers may swap).
float Sum(float local, float decoded) {
  const float s = local + decoded;
  return std::isnan(s) ? FloatOf(kF32QuietNaN) : s;
}

using internal::GetSrc;
using internal::SrcCtx;

// The scale bits that decode element i of a block-format segment in nb blocks:
// its block's scale, or with two-level scales its sub-block's step.
uint32_t ElemScaleBits(const WireSpec& spec, const uint8_t* wire, size_t nb, size_t i) {
  const internal::ScaleIo sio = internal::ScaleIoOf(spec);
  const uint32_t s = internal::LoadScaleBits(wire + sio.bytes * (i / spec.block), sio);
  if (!sio.two_level) return s;
  return internal::SubStepBits(s, internal::LoadSubCode(wire + internal::SubsOffset(sio, nb), i / internal::kSubBlock));
}

struct SumCtx {  // f32(local[j]) + decode(element first + j) of one block of a segment
  const WireSpec* spec;
  DType local_type;
  const void* local;
  const uint8_t* wire;
  size_t nb, n, first;
};
float GetSum(const void* ctx, size_t j) {
  const auto* c = static_cast<const SumCtx*>(ctx);
  const internal::ScaleIo sio = internal::ScaleIoOf(*c->spec);
  const uint8_t* codes = c->wire + internal::CodesOffset(sio, c->nb, c->n);
  const int32_t q = internal::LoadCode(c->spec->format, codes, c->first + j);
  return Sum(internal::LoadAsF32(c->local_type, c->local, j),
             internal::RefDecodeCode(c->spec->format, ElemScaleBits(*c->spec, c->wire, c->nb, c->first + j),
                                     uint32_t(q)));
}

// Decoded element i of a block-format segment of n elements.
float DecodeBlockElem(const WireSpec& spec, const uint8_t* wire, size_t nb, size_t n, size_t i) {
  const internal::ScaleIo sio = internal::ScaleIoOf(spec);
  const uint8_t* codes = wire + internal::CodesOffset(sio, nb, n);
  return internal::RefDecodeCode(spec.format, ElemScaleBits(spec, wire, nb, i),
                                 uint32_t(internal::LoadCode(spec.format, codes, i)));
}

const void* Advance(DType t, const void* p, size_t elems) {
  return static_cast<const uint8_t*>(p) + elems * DTypeSize(t);
}

}  // namespace

// ---- Format metadata ---------------------------------------------------------------------

Format RawFormatOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return Format::kRawF32;
    case DType::kBFloat16: return Format::kRawBF16;
    case DType::kFloat16: return Format::kRawF16;
  }
  return Format::kRawF32;
}

const char* FormatName(Format f) {
  switch (f) {
    case Format::kRawF32: return "raw_f32";
    case Format::kRawBF16: return "raw_bf16";
    case Format::kRawF16: return "raw_f16";
    case Format::kRawE5M2: return "raw_e5m2";
    default: break;
  }
  const BlockFormatInfo* r = BlockInfoOf(f);
  return r ? r->name : "unknown";
}

size_t WireBytes(WireSpec spec, size_t n) {
  if (internal::IsBlockFormat(spec.format)) {
    assert(spec.block > 0);
    const size_t nb = (n + spec.block - 1) / spec.block;
    return internal::OwnCodesOffset(internal::ScaleIoOf(spec), nb, n) + internal::CodeBytes(spec.format, n);
  }
  return n * RawElemBytes(spec.format);
}

size_t PartGranule(const WireSpec& spec) {
  if (!internal::IsBlockFormat(spec.format)) return 1;
  // A part starts on a block boundary and on a whole byte of codes (int4, odd block: two).
  const size_t bits = internal::ParamsOf(spec.format).bits;
  size_t g = spec.block;
  while (g * bits % 8) g += spec.block;
  return g;
}

WirePart PartOf(const WireSpec& spec, size_t n, size_t begin) {
  assert(begin < n && begin % PartGranule(spec) == 0);
  WirePart p;
  p.spec = spec;
  if (!internal::IsBlockFormat(spec.format)) {
    p.wire_at = begin * RawElemBytes(spec.format);
    return p;
  }
  const internal::ScaleIo own = internal::ScaleIoOf(WireSpec{spec.format, spec.block, 0, 0, 0, 0, spec.scale});
  const size_t nb = (n + spec.block - 1) / spec.block;
  const size_t b0 = begin / spec.block;
  p.wire_at = size_t(own.bytes) * b0;  // the part's first scale
  p.spec.part_codes_at =
      internal::OwnCodesOffset(own, nb, n) + internal::CodeBytes(spec.format, begin) - p.wire_at;
  p.spec.part_subs_at = own.two_level ? size_t(own.bytes) * nb + begin / (2 * internal::kSubBlock) - p.wire_at : 0;
  p.spec.offset = spec.offset + begin;
  return p;
}

namespace internal {

float GetSrc(const void* ctx, size_t j) {
  const auto* c = static_cast<const SrcCtx*>(ctx);
  return LoadAsF32(c->type, c->p, j);
}

float LoadAsF32(DType t, const void* p, size_t i) {
  switch (t) {
    case DType::kFloat32: return static_cast<const float*>(p)[i];
    case DType::kBFloat16: return ref::BF16ToF32(static_cast<const uint16_t*>(p)[i]);
    case DType::kFloat16: return ref::F16ToF32(static_cast<const uint16_t*>(p)[i]);
  }
  return 0.0f;
}

uint32_t RoundToNarrow(uint32_t abs, int bias, int mbits, int he_over) {
  const int e = int(abs >> 23);        // biased f32 exponent
  const uint32_t m = abs & 0x7FFFFFu;  // f32 mantissa
  const int he = e - 127 + bias;       // biased narrow exponent
  if (he >= he_over) return uint32_t(he_over) << mbits;
  const int drop = 23 - mbits;
  uint32_t v, rem, half;
  if (he >= 1) {  // normal result: keep mbits mantissa bits; a carry may bump the exponent
    v = (uint32_t(he) << mbits) | (m >> drop);
    rem = m & ((1u << drop) - 1);
    half = 1u << (drop - 1);
  } else {
    // Subnormal result in units of 2^(1 - bias - mbits). value = full * 2^(e - 150) for a
    // normal f32 (f32 subnormals are far below half a unit and round to zero).
    if (e == 0) return 0;
    const uint32_t full = m | 0x800000u;
    const int shift = (150 + 1 - bias - mbits) - e;  // >= drop + 1
    if (shift > 25) return 0;                        // full * 2^-shift < 0.5
    v = full >> shift;
    rem = full & ((1u << shift) - 1);
    half = 1u << (shift - 1);
  }
  if (rem > half || (rem == half && (v & 1u))) ++v;
  return v;
}

}  // namespace internal

namespace ref {

// ---- Scalar conversions -------------------------------------------------------------------

float BF16ToF32(uint16_t h) { return FloatOf(uint32_t(h) << 16); }

uint16_t F32ToBF16(float f) {
  const uint32_t b = BitsOf(f);
  if ((b & kF32AbsMask) > kF32Inf) return 0x7FC0;
  return uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

float F16ToF32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  const uint32_t m = h & 0x3FFu;
  if (e == 31) return FloatOf(sign | kF32Inf | (m << 13));
  if (e == 0) {
    const float mag = std::ldexp(float(m), -24);  // exact: m < 2^10
    return FloatOf(sign | BitsOf(mag));
  }
  return FloatOf(sign | ((e - 15 + 127) << 23) | (m << 13));
}

uint16_t F32ToF16(float f) {
  const uint32_t b = BitsOf(f);
  const uint32_t abs = b & kF32AbsMask;
  const uint16_t sign = uint16_t((b >> 16) & 0x8000u);
  if (abs > kF32Inf) return 0x7E00;
  if (abs == kF32Inf) return sign | 0x7C00;
  uint32_t v = RoundToE5(abs, 10);
  if (v > 0x7C00u) v = 0x7C00u;  // overflow -> Inf
  return uint16_t(sign | v);
}

float E5M2ToF32(uint8_t b) { return F16ToF32(uint16_t(uint16_t(b) << 8)); }

float E4M3ToF32(uint8_t b) {
  const uint32_t sign = uint32_t(b & 0x80u) << 24;
  const uint32_t e = (b >> 3) & 0xFu;
  const uint32_t m = b & 0x7u;
  if ((b & 0x7Fu) == 0x7Fu) return FloatOf(sign | kF32Inf | (m << 20));  // NaN
  if (e == 0) return FloatOf(sign | BitsOf(std::ldexp(float(m), -9)));  // exact
  return FloatOf(sign | ((e - 7 + 127) << 23) | (m << 20));
}

uint8_t F32ToE4M3(float f) {
  const uint32_t b = BitsOf(f);
  const uint32_t abs = b & kF32AbsMask;
  const uint8_t sign = uint8_t((b >> 24) & 0x80u);
  if (abs > kF32Inf) return 0x7F;
  uint32_t v = abs == kF32Inf ? 0x7Eu : internal::RoundToNarrow(abs, 7, 3, 16);
  if (v > 0x7Eu) v = 0x7Eu;  // saturate to 448
  return uint8_t(sign | v);
}

uint8_t F32ToE5M2(float f) {
  const uint32_t b = BitsOf(f);
  const uint32_t abs = b & kF32AbsMask;
  const uint8_t sign = uint8_t((b >> 24) & 0x80u);
  if (abs > kF32Inf) return 0x7F;
  if (abs == kF32Inf) return sign | 0x7C;
  uint32_t v = RoundToE5(abs, 2);
  if (v > 0x7Bu) v = 0x7Bu;  // finite overflow saturates to 57344
  return uint8_t(sign | v);
}

// ---- Kernels ------------------------------------------------------------------------------

void Convert(DType src_type, const void* src, size_t n, DType dst_type, void* dst) {
  if (src_type == dst_type) {
    if (n) std::memmove(dst, src, n * DTypeSize(src_type));
    return;
  }
  for (size_t i = 0; i < n; ++i) StoreAs(dst_type, internal::LoadAsF32(src_type, src, i), dst, i);
}

void AccumulateLoss(DType got_type, const void* got, const float* exact, size_t n,
                    float* residual) {
  for (size_t i = 0; i < n; ++i) {
    const float d = exact[i] - internal::LoadAsF32(got_type, got, i);
    residual[i] += std::isfinite(d) ? d : 0.0f;
  }
}

void Encode(WireSpec spec, DType src_type, const void* src, size_t n, uint8_t* wire) {
  ref::Encode(spec, src_type, src, n, wire, nullptr);
}

namespace {
// Encodes a block-format segment of n elements block by block into `wire`; ctx_of(begin, nb)
// gives the context `get` reads the block that starts at element `begin` through.
template <class CtxOf>
void EncodeBlocks(const WireSpec& spec, size_t n, internal::ElemFn get, uint8_t* wire,
                  EncodeStats* stats, CtxOf ctx_of) {
  const size_t B = spec.block;
  const size_t nb = (n + B - 1) / B;
  const internal::Rounding rnd = internal::RoundingOf(spec);
  const internal::ScaleIo sio = internal::ScaleIoOf(spec);
  for (size_t b = 0; b < nb; ++b) {
    const size_t begin = b * B;
    const auto ctx = ctx_of(begin, nb);
    internal::RefEncodeBlock(spec.format, sio, get, &ctx, std::min(B, n - begin), rnd, begin,
                             wire + sio.bytes * b, wire + internal::CodesOffset(sio, nb, n), stats,
                             wire + internal::SubsOffset(sio, nb));
  }
}
}  // namespace

void Encode(WireSpec spec, DType src_type, const void* src, size_t n, uint8_t* wire,
            EncodeStats* stats) {
  if (!internal::IsBlockFormat(spec.format)) {
    if (RawIsDType(spec.format, src_type)) {
      if (n) std::memcpy(wire, src, n * DTypeSize(src_type));
      return;
    }
    for (size_t i = 0; i < n; ++i)
      StoreRaw(spec.format, internal::LoadAsF32(src_type, src, i), wire, i);
    return;
  }
  EncodeBlocks(spec, n, &GetSrc, wire, stats, [&](size_t begin, size_t) {
    return SrcCtx{src_type, Advance(src_type, src, begin)};
  });
}

void Decode(WireSpec spec, const uint8_t* wire, size_t n, DType dst_type, void* dst) {
  if (!internal::IsBlockFormat(spec.format)) {
    if (RawIsDType(spec.format, dst_type)) {
      if (n) std::memcpy(dst, wire, n * DTypeSize(dst_type));
      return;
    }
    for (size_t i = 0; i < n; ++i) StoreAs(dst_type, LoadRaw(spec.format, wire, i), dst, i);
    return;
  }
  const size_t B = spec.block;
  const size_t nb = (n + B - 1) / B;
  for (size_t i = 0; i < n; ++i)
    StoreAs(dst_type, DecodeBlockElem(spec, wire, nb, n, i), dst, i);
}

void DecodeAccumulate(WireSpec spec, const uint8_t* wire, size_t n, DType local_type,
                      const void* local, float* out_f32) {
  if (!internal::IsBlockFormat(spec.format)) {
    for (size_t i = 0; i < n; ++i)
      out_f32[i] = Sum(internal::LoadAsF32(local_type, local, i), LoadRaw(spec.format, wire, i));
    return;
  }
  const size_t B = spec.block;
  const size_t nb = (n + B - 1) / B;
  for (size_t i = 0; i < n; ++i)
    out_f32[i] = Sum(internal::LoadAsF32(local_type, local, i),
                     DecodeBlockElem(spec, wire, nb, n, i));
}

void DecodeAccumulateEncode(WireSpec spec, const uint8_t* wire_in, size_t n, DType local_type,
                            const void* local, uint8_t* wire_out) {
  ref::DecodeAccumulateEncode(spec, wire_in, n, local_type, local, wire_out, nullptr);
}

void DecodeAccumulateEncode(WireSpec spec, const uint8_t* wire_in, size_t n, DType local_type,
                            const void* local, uint8_t* wire_out, EncodeStats* stats) {
  if (!internal::IsBlockFormat(spec.format)) {
    for (size_t i = 0; i < n; ++i) {
      const float sum =
          Sum(internal::LoadAsF32(local_type, local, i), LoadRaw(spec.format, wire_in, i));
      StoreRaw(spec.format, sum, wire_out, i);
    }
    return;
  }
  // Each block's sums are produced twice (absmax pass, quantize pass) instead of stored.
  EncodeBlocks(spec, n, &GetSum, wire_out, stats, [&](size_t begin, size_t nb) {
    return SumCtx{&spec, local_type, Advance(local_type, local, begin), wire_in, nb, n, begin};
  });
}

}  // namespace ref

}  // namespace equarx::codec
