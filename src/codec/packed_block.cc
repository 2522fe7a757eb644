// equarx codec — SIMD kernels of the block-scaled int6 and int5 formats (Format::kInt6Block,
// Format::kInt5Block): codes packed across byte boundaries.
//
// Highway foreach_target translation unit; the pipeline is codec/block_simd-inl.h, this file
// gives the two formats' code ops: q = clamp(roundeven(y), -q, q) (stochastic:
// floor(y + u)), q = 31 (int6) or 15 (int5), stored as `bits`-bit two's complement codes
// packed low bits first (docs/wire_format.md, "Code packing"). A *group* is the fewest codes
// that fill whole bytes: 4 int6 codes in 3 bytes, 8 int5 codes in 5 bytes. The arithmetic
// (scale, round, clamp, decode) runs in vectors; a vector's codes are packed or unpacked one
// group at a time in a 64-bit word through a lane array. Where a vector does not start on a
// group or is shorter than one (int5 on 4-lane targets, the SCALAR target) each code goes
// through the reference's bit-exact store and load, in increasing element order (the order
// the pipeline stores in). A block size whose blocks do not start on a whole byte
// (block * bits not a multiple of 8; never one the library ships) runs the reference.
#include <cstring>

#include "codec/codec.h"
#include "codec/internal.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/packed_block.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "codec/block_simd-inl.h"
#include "codec/block_dae-inl.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace {

template <Format kF>
struct PackedFmt : internal::RowConstants<kF> {
  static constexpr bool kFixedBlocks = false;
  static constexpr unsigned kBits = BlockInfoOf(kF)->bits;
  static constexpr int kQInt = int(BlockInfoOf(kF)->q);
  static constexpr size_t kGroup = kBits == 6 ? 4 : 8;  // codes per whole number of bytes
  static constexpr size_t kGroupBytes = kGroup * kBits / 8;
  static constexpr uint64_t kMask = (uint64_t(1) << kBits) - 1;
  static_assert(kBits == 6 || kBits == 5, "int6 or int5");
  static constexpr size_t kMaxN = hn::MaxLanes(DF());

  static HWY_INLINE VI Round(VF y) { return ClampQ<kQInt>(RoundEven(y)); }
  static HWY_INLINE VI RoundSR(VF y, VF u) { return ClampQ<kQInt>(FloorSum(y, u)); }
  static HWY_INLINE bool WholeGroups(size_t i) {
    return hn::Lanes(DF()) % kGroup == 0 && i % kGroup == 0;
  }
  // N codes from element i.
  static HWY_INLINE void Store(VI q, uint8_t* codes, size_t i) {
    const size_t N = hn::Lanes(DF());
    HWY_ALIGN int32_t c[kMaxN];
    hn::Store(q, DI(), c);
    if (!WholeGroups(i)) {
      for (size_t k = 0; k < N; ++k) internal::StoreCode(kF, codes, i + k, c[k]);
      return;
    }
    uint8_t* out = codes + i * kBits / 8;
    for (size_t g = 0; g < N; g += kGroup, out += kGroupBytes) {
      uint64_t w = 0;
      for (size_t k = 0; k < kGroup; ++k) w |= (uint64_t(uint32_t(c[g + k])) & kMask) << (kBits * k);
      for (size_t b = 0; b < kGroupBytes; ++b) out[b] = uint8_t(w >> (8 * b));
    }
  }
  static HWY_INLINE VI Load(const uint8_t* codes, size_t i) {
    const size_t N = hn::Lanes(DF());
    HWY_ALIGN int32_t c[kMaxN];
    if (!WholeGroups(i)) {
      for (size_t k = 0; k < N; ++k) c[k] = internal::LoadCode(kF, codes, i + k);
      return hn::Load(DI(), c);
    }
    const uint8_t* in = codes + i * kBits / 8;
    for (size_t g = 0; g < N; g += kGroup, in += kGroupBytes) {
      uint64_t w = 0;
      for (size_t b = 0; b < kGroupBytes; ++b) w |= uint64_t(in[b]) << (8 * b);
      // Code k to the top of a 32-bit word, then an arithmetic shift sign-extends it.
      for (size_t k = 0; k < kGroup; ++k)
        c[g + k] = int32_t(uint32_t(w >> (kBits * k)) << (32 - kBits)) >> (32 - kBits);
    }
    return hn::Load(DI(), c);
  }
  static HWY_INLINE VF Decode(VI q, VF vs) { return hn::Mul(hn::ConvertTo(DF(), q), vs); }
  static HWY_INLINE void Zero(uint8_t* codes, size_t first, size_t len) {
    std::memset(codes + first * kBits / 8, 0, (len * kBits + 7) / 8);  // first: a whole byte
  }
  template <class Load>
  static HWY_INLINE void QuantizeBlock(Load, VF, size_t, uint8_t*, size_t, size_t*) {}
};
using Int6Fmt = PackedFmt<Format::kInt6Block>;
using Int5Fmt = PackedFmt<Format::kInt5Block>;

}  // namespace

// ---- Kernels (dispatched) ----------------------------------------------------------------

// One unit for both formats: the wire spec's format picks the traits.
#define EQUARX_PACKED_KERNELS(spec, K) \
  ((spec).format == Format::kInt5Block ? &FormatKernels<Int5Fmt>::K : &FormatKernels<Int6Fmt>::K)
EQUARX_BLOCK_FORMAT_IMPLS(Packed, EQUARX_PACKED_KERNELS)

}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace equarx::codec {

// Blocks that do not start on a whole byte of codes run the reference (see the top comment).
#define EQUARX_PACKED_UNALIGNED(spec) \
  ((spec).block * internal::ParamsOf((spec).format).bits % 8 != 0)
EQUARX_BLOCK_FORMAT_EXPORTS(Packed, EQUARX_PACKED_UNALIGNED)

}  // namespace equarx::codec
#endif  // HWY_ONCE
