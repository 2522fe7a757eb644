// equarx codec — SIMD kernels of the block-scaled int4 format (Format::kInt4Block).
//
// Highway foreach_target translation unit; the pipeline is codec/block_simd-inl.h, this file
// gives int4's code ops: q = clamp(roundeven(y), -7, 7) (stochastic: floor(y + u)), two codes
// per byte, element 2j of the segment in the low nibble of byte j. A vector of N codes is
// loaded as N/2 bytes widened to u16 lanes whose two bytes become the two nibbles
// ((w & 0xF) | ((w << 4) & 0xF00)), then widened again and sign-extended ((v ^ 8) - 8); stores
// do the reverse. Vector code loads/stores start on an even element, so the SIMD kernels need
// an even block size; an odd block size (never used in practice) runs the reference. On the
// SCALAR target (one lane) codes go through the reference's nibble load/store.
#include <cstring>

#include "codec/codec.h"
#include "codec/internal.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/int4_block.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "codec/block_simd-inl.h"
#include "codec/block_dae-inl.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace {

struct Int4Fmt : internal::RowConstants<Format::kInt4Block> {
  static constexpr bool kFixedBlocks = false;

  static HWY_INLINE VI Round(VF y) { return ClampQ<7>(RoundEven(y)); }
  static HWY_INLINE VI RoundSR(VF y, VF u) { return ClampQ<7>(FloorSum(y, u)); }
#if HWY_TARGET == HWY_SCALAR
  static HWY_INLINE void Store(VI q, uint8_t* codes, size_t i) {
    internal::StoreCode(kFormat, codes, i, hn::GetLane(q));
  }
  static HWY_INLINE VI Load(const uint8_t* codes, size_t i) {
    return hn::Set(DI(), internal::LoadCode(kFormat, codes, i));
  }
#else
  using DH8 = hn::Rebind<uint8_t, hn::Half<DF>>;   // N/2 bytes
  using DH16 = hn::Rebind<uint16_t, hn::Half<DF>>;  // N/2 u16 = N bytes
  using DHI16 = hn::Rebind<int16_t, hn::Half<DF>>;
  // N codes from element i (even): byte k -> lanes 2k (low nibble), 2k+1 (high nibble).
  static HWY_INLINE VI Load(const uint8_t* codes, size_t i) {
    const DH16 d16;
    const DI di;
    const auto w = hn::PromoteTo(d16, hn::LoadU(DH8(), codes + i / 2));
    const auto nib = hn::Or(hn::And(w, hn::Set(d16, 0x000F)),
                            hn::And(hn::ShiftLeft<4>(w), hn::Set(d16, 0x0F00)));
    const VI v = hn::BitCast(di, hn::PromoteTo(DU(), hn::BitCast(DU8(), nib)));
    return hn::Sub(hn::Xor(v, hn::Set(di, 8)), hn::Set(di, 8));  // sign-extend the nibble
  }
  static HWY_INLINE void Store(VI q, uint8_t* codes, size_t i) {
    const DH16 d16;
    const auto w = hn::BitCast(d16, hn::DemoteTo(D8(), q));  // low byte c[2k], high c[2k+1]
    const auto packed = hn::Or(hn::And(w, hn::Set(d16, 0x000F)),
                               hn::And(hn::ShiftRight<4>(w), hn::Set(d16, 0x00F0)));
    hn::StoreU(hn::DemoteTo(DH8(), hn::BitCast(DHI16(), packed)), DH8(), codes + i / 2);
  }
#endif
  static HWY_INLINE VF Decode(VI q, VF vs) { return hn::Mul(hn::ConvertTo(DF(), q), vs); }
  static HWY_INLINE void Zero(uint8_t* codes, size_t first, size_t len) {
    std::memset(codes + first / 2, 0, (len + 1) / 2);  // first is even
  }
  template <class Load>
  static HWY_INLINE void QuantizeBlock(Load, VF, size_t, uint8_t*, size_t, size_t*) {}
};

}  // namespace

// ---- Kernels (dispatched) ----------------------------------------------------------------

#define EQUARX_INT4_KERNELS(spec, K) FormatKernels<Int4Fmt>::K
EQUARX_BLOCK_FORMAT_IMPLS(Int4, EQUARX_INT4_KERNELS)

}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace equarx::codec {

// An odd block size runs the reference (see the top comment).
#define EQUARX_INT4_ODD_BLOCK(spec) (!internal::BlocksStartOnBytes(spec))
EQUARX_BLOCK_FORMAT_EXPORTS(Int4, EQUARX_INT4_ODD_BLOCK)

}  // namespace equarx::codec
#endif  // HWY_ONCE
