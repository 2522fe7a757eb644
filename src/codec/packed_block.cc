// equarx codec — SIMD kernels of the block-scaled int6 and int5 formats (Format::kInt6Block,
// Format::kInt5Block): codes packed across byte boundaries.
//
// Highway foreach_target translation unit; the pipeline is codec/block_simd-inl.h, this file
// gives the two formats' code ops: q = clamp(roundeven(y), -q, q) (stochastic:
// floor(y + u)), q = 31 (int6) or 15 (int5), stored as `bits`-bit two's complement codes
// packed low bits first (docs/wire_format.md, "Code packing"). A *group* is the fewest codes
// that fill whole bytes: 4 int6 codes in 3 bytes, 8 int5 codes in 5 bytes. The arithmetic
// (scale, round, clamp, decode) runs in vectors, and so does the packing: a vector's N codes
// become N bytes, neighbouring fields are joined in ever wider lanes until each group's bits
// lie in the low bytes of its lane, and one byte shuffle gathers those bytes (unpacking runs
// the same steps backwards); the groups' bytes move between memory and the vector through
// integer registers, so that no load reads back a store of a different size. Where a vector
// does not start on a group or is shorter than one (int5 on 4-lane targets such as SSE4, and
// the SCALAR target) each code goes through the reference's bit-exact store and load, in
// increasing element order (the order the pipeline stores in). A block size whose blocks do
// not start on a whole byte (block * bits not a multiple of 8; never one the library ships)
// runs the reference.
#include <bit>
#include <cstring>
#include <type_traits>

#include "codec/codec.h"
#include "codec/internal.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/packed_block.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "codec/block_simd-inl.h"
#include "codec/block_dae-inl.h"

static_assert(std::endian::native == std::endian::little, "codes are packed little-endian");

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
  static_assert(kBits == 6 || kBits == 5, "int6 or int5");
  static constexpr size_t kMaxN = hn::MaxLanes(DF());
  // The vector path: whole groups of codes in one vector of N code bytes (int6 from 4 lanes,
  // int5 from 8; never on the SCALAR target).
  static constexpr bool kVector = HWY_TARGET != HWY_SCALAR && kMaxN >= kGroup;
  // The lane of a whole int5 group (a type that depends on the format, so that int6's
  // instantiations never form a u64 view of fewer than 8 bytes).
  using DGroup5 = hn::Repartition<std::conditional_t<kBits == 5, uint64_t, uint32_t>, DU8>;

  static HWY_INLINE VI Round(VF y) { return ClampQ<kQInt>(RoundEven(y)); }
  static HWY_INLINE VI RoundSR(VF y, VF u) { return ClampQ<kQInt>(FloorSum(y, u)); }
  static HWY_INLINE bool WholeGroups(size_t i) {
    return kVector && hn::Lanes(DF()) % kGroup == 0 && i % kGroup == 0;
  }
  // The byte positions of the packed groups within the widened ones (a group of G codes widened
  // to 4 bytes (int6) or 8 bytes (int5) holds its packed bytes first), for TableLookupBytes.
  static HWY_INLINE const uint8_t* PackIndex() {
    static constexpr uint8_t k6[16] = {0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0, 0, 0, 0};
    static constexpr uint8_t k5[16] = {0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 0, 0, 0, 0, 0, 0};
    return kBits == 6 ? k6 : k5;
  }
  static HWY_INLINE const uint8_t* UnpackIndex() {  // 0x80: a zero byte
    static constexpr uint8_t k6[16] = {0, 1, 2, 0x80, 3, 4,  5,  0x80,
                                       6, 7, 8, 0x80, 9, 10, 11, 0x80};
    static constexpr uint8_t k5[16] = {0, 1, 2, 3, 4, 0x80, 0x80, 0x80,
                                       5, 6, 7, 8, 9, 0x80, 0x80, 0x80};
    return kBits == 6 ? k6 : k5;
  }
  // N codes from element i. Vector path: the codes' low bits as N bytes, then pairs of
  // neighbouring fields joined in ever wider lanes (u16: two codes, u32: four, u64 for int5:
  // eight), so that each group's bits lie in the low bytes of its lane, then those bytes
  // gathered by one byte shuffle.
  static HWY_INLINE void Store(VI q, uint8_t* codes, size_t i) {
    const size_t N = hn::Lanes(DF());
    if (!WholeGroups(i)) {
      HWY_ALIGN int32_t c[kMaxN];
      hn::Store(q, DI(), c);
      for (size_t k = 0; k < N; ++k) internal::StoreCode(kF, codes, i + k, c[k]);
      return;
    }
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kVector) {
      const DU8 d8;
      const hn::Repartition<uint16_t, DU8> d16;
      const hn::Repartition<uint32_t, DU8> d32;
      const auto e = hn::DemoteTo(d8, hn::And(q, hn::Set(DI(), (1 << kBits) - 1)));
      const auto w = hn::BitCast(d16, e);
      constexpr uint16_t k1 = (1u << kBits) - 1;  // one code
      const auto t = hn::Or(hn::And(w, hn::Set(d16, k1)),
                            hn::And(hn::ShiftRight<8 - kBits>(w),
                                    hn::Set(d16, uint16_t(k1 << kBits))));
      const auto u = hn::BitCast(d32, t);
      constexpr uint32_t k2 = (1u << (2 * kBits)) - 1;  // two codes
      auto v = hn::BitCast(d8, hn::Or(hn::And(u, hn::Set(d32, k2)),
                                      hn::And(hn::ShiftRight<16 - 2 * kBits>(u),
                                              hn::Set(d32, k2 << (2 * kBits)))));
      if constexpr (kBits == 5) {
        const DGroup5 d64;
        const auto x = hn::BitCast(d64, v);
        constexpr uint64_t k4 = (uint64_t(1) << 20) - 1;  // four codes
        v = hn::BitCast(d8, hn::Or(hn::And(x, hn::Set(d64, k4)),
                                   hn::And(hn::ShiftRight<12>(x), hn::Set(d64, k4 << 20))));
      }
      StoreBytes<kMaxN>(hn::TableLookupBytes(v, hn::LoadU(d8, PackIndex())),
                        codes + i * kBits / 8);
    }
#endif
  }
  // kN (<= 8) little-endian bytes at p as one word, and back: whole-size pieces of 4, 2 and 1
  // bytes, each one load or store (a partial copy into a wider variable would store it in
  // pieces and read it back whole, which stalls the load).
  template <size_t kN>
  static HWY_INLINE uint64_t LoadWord(const uint8_t* p) {
    if constexpr (kN == 8) {
      uint64_t x;
      std::memcpy(&x, p, 8);
      return x;
    } else if constexpr (kN >= 4) {
      uint32_t x;
      std::memcpy(&x, p, 4);
      return uint64_t(x) | (LoadWord<kN - 4>(p + 4) << 32);
    } else if constexpr (kN >= 2) {
      uint16_t x;
      std::memcpy(&x, p, 2);
      return uint64_t(x) | (LoadWord<kN - 2>(p + 2) << 16);
    } else if constexpr (kN == 1) {
      return p[0];
    } else {
      return 0;
    }
  }
  template <size_t kN>
  static HWY_INLINE void StoreWord(uint64_t w, uint8_t* p) {
    if constexpr (kN == 8) {
      std::memcpy(p, &w, 8);
    } else if constexpr (kN >= 4) {
      const uint32_t x = uint32_t(w);
      std::memcpy(p, &x, 4);
      StoreWord<kN - 4>(w >> 32, p + 4);
    } else if constexpr (kN >= 2) {
      const uint16_t x = uint16_t(w);
      std::memcpy(p, &x, 2);
      StoreWord<kN - 2>(w >> 16, p + 2);
    } else if constexpr (kN == 1) {
      p[0] = uint8_t(w);
    }
  }
#if HWY_TARGET != HWY_SCALAR
  // The first kNB * kBits / 8 bytes of v (kNB bytes) to p, through integer registers.
  template <size_t kNB>
  static HWY_INLINE void StoreBytes(hn::Vec<hn::Simd<uint8_t, kNB, 0>> v, uint8_t* p) {
    constexpr size_t kBytes = kNB * kBits / 8;
    if constexpr (kNB == 16) {
      const hn::Simd<uint64_t, 2, 0> d;
      const auto w = hn::BitCast(d, v);
      StoreWord<8>(hn::GetLane(w), p);
      StoreWord<kBytes - 8>(hn::GetLane(hn::UpperHalf(hn::Simd<uint64_t, 1, 0>(), w)),
                            p + 8);
    } else if constexpr (kNB == 8) {
      StoreWord<kBytes>(hn::GetLane(hn::BitCast(hn::Simd<uint64_t, 1, 0>(), v)), p);
    } else {
      StoreWord<kBytes>(hn::GetLane(hn::BitCast(hn::Simd<uint32_t, 1, 0>(), v)), p);
    }
  }
  // The kNB * kBits / 8 bytes at p (the groups' own bytes, never more) as a vector of kNB
  // bytes, through integer registers.
  template <size_t kNB>
  static HWY_INLINE hn::Vec<hn::Simd<uint8_t, kNB, 0>> LoadBytes(const uint8_t* p) {
    constexpr size_t kBytes = kNB * kBits / 8;
    const hn::Simd<uint8_t, kNB, 0> d8;
    const uint64_t w0 = LoadWord<(kBytes < 8 ? kBytes : 8)>(p);
    const uint64_t w1 = LoadWord<(kBytes > 8 ? kBytes - 8 : 0)>(p + 8);
    if constexpr (kNB == 16) {
      const hn::Simd<uint64_t, 2, 0> d;
      return hn::BitCast(d8, hn::InterleaveLower(hn::Set(d, w0), hn::Set(d, w1)));
    } else if constexpr (kNB == 8) {
      return hn::BitCast(d8, hn::Set(hn::Simd<uint64_t, 1, 0>(), w0));
    } else {
      return hn::BitCast(d8, hn::Set(hn::Simd<uint32_t, 1, 0>(), uint32_t(w0)));
    }
  }
#endif
  static HWY_INLINE VI Load(const uint8_t* codes, size_t i) {
    const size_t N = hn::Lanes(DF());
    if (!WholeGroups(i)) {
      HWY_ALIGN int32_t c[kMaxN];
      for (size_t k = 0; k < N; ++k) c[k] = internal::LoadCode(kF, codes, i + k);
      return hn::Load(DI(), c);
    }
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kVector) {
      const DU8 d8;
      const hn::Repartition<uint16_t, DU8> d16;
      const hn::Repartition<uint32_t, DU8> d32;
      auto v = hn::TableLookupBytesOr0(LoadBytes<kMaxN>(codes + i * kBits / 8),
                                       hn::LoadU(d8, UnpackIndex()));
      if constexpr (kBits == 5) {
        const DGroup5 d64;
        const auto x = hn::BitCast(d64, v);
        constexpr uint64_t k4 = (uint64_t(1) << 20) - 1;
        v = hn::BitCast(d8, hn::Or(hn::And(x, hn::Set(d64, k4)),
                                   hn::And(hn::ShiftLeft<12>(x), hn::Set(d64, k4 << 32))));
      }
      const auto u = hn::BitCast(d32, v);
      constexpr uint32_t k2 = (1u << (2 * kBits)) - 1;
      const auto t = hn::BitCast(d16, hn::Or(hn::And(u, hn::Set(d32, k2)),
                                             hn::And(hn::ShiftLeft<16 - 2 * kBits>(u),
                                                     hn::Set(d32, k2 << 16))));
      constexpr uint16_t k1 = (1u << kBits) - 1;
      const auto w = hn::Or(hn::And(t, hn::Set(d16, k1)),
                            hn::And(hn::ShiftLeft<8 - kBits>(t), hn::Set(d16, uint16_t(k1 << 8))));
      const VI c = hn::BitCast(DI(), hn::PromoteTo(DU(), hn::BitCast(d8, w)));
      const VI half = hn::Set(DI(), 1 << (kBits - 1));
      return hn::Sub(hn::Xor(c, half), half);  // sign-extend the field
    }
#endif
    return hn::Zero(DI());  // not reached: WholeGroups is false without the vector path
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
#define EQUARX_PACKED_UNALIGNED(spec) (!internal::BlocksStartOnBytes(spec))
EQUARX_BLOCK_FORMAT_EXPORTS(Packed, EQUARX_PACKED_UNALIGNED)

}  // namespace equarx::codec
#endif  // HWY_ONCE
