// equarx `hierarchical` — reduce inside each host unquantized, across hosts quantized.
//
// Ranks sit on hosts of R = ranks_per_host ranks in rank order (the last host may have fewer).
// The tensor is cut on the block grid into S = R shards. On a host of R_h ranks, local rank l
// owns the shards s with s mod R_h == l (one each on a full host; a smaller host's ranks own
// several).
//
//   1. RS inside the host: every rank sends its contribution to shard s (in the call's dtype,
//      as it is) to the shard's owner on its host, which sums the host's contributions in f32
//      in local-rank order.
//   2. Across hosts: for every shard s, the owners of s (one per host) run the `inner`
//      algorithm (any flat one; auto picks by the shard's size) on their host sums, rounded
//      to the call's dtype, as one AllReduce of H ranks: the library's own plan and executor
//      on a sub-transport of those ranks, with its own tag range. This is the only step that
//      quantizes, and its bytes are a flat plan's over H ranks.
//   3. AG inside the host: the owner sends the finished shard (the call's dtype) to the other
//      ranks of its host.
//
//     host 0: r0 r1    host 1: r2 r3       shard 0: r0 <-> r2 (inner)   shard 1: r1 <-> r3
//
// Every rank's result is bitwise identical: a shard's inner AllReduce gives its members the
// same bytes, and step 3 copies them. Error: the host sums are f32 sums of R_h values (one
// rounding each), rounded once to the dtype; then the inner algorithm's error over H
// contributions (the host sums), as if the hosts were its ranks. A rotation runs inside the
// inner step, on rotation blocks numbered from the whole tensor's element 0.
//
// Tags (low 32 bits; the call's sequence number is the high half): the inner call of shard s
// uses (s + 1) << 20 + the executor's own tags (< 2^20); steps 1 and 3 use bit 31.
#include "algo/hierarchical.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "algo/parts.h"
#include "algo/scratch.h"
#include "algo/selector.h"
#include "codec/codec.h"
#include "transport/sub_transport.h"

namespace equarx::algo {

HostLayout::HostLayout(int n, int r) : ranks(n), per_host(std::max(1, r)) {
  hosts = (ranks + per_host - 1) / per_host;
}

int HostLayout::Size(int host) const { return std::min(per_host, ranks - First(host)); }

namespace {

constexpr uint64_t kIntraTag = uint64_t(1) << 31;

uint64_t InnerTagBase(uint64_t tag_base, int shard) { return tag_base | (uint64_t(shard + 1) << 20); }

Range ShardRange(const AllReduceOptions& o, size_t count, const HostLayout& L, int s) {
  return SplitBlocks(Range{0, count}, o.block, size_t(L.Shards()), size_t(s));
}

// The inner options: the call's, with the inner algorithm.
AllReduceOptions InnerOptions(const AllReduceOptions& o) {
  AllReduceOptions in = o;
  in.algorithm = o.inner;
  return in;
}

// Posts every operation, then waits for all of them; on any failure cancels what is left.
struct Op {
  bool send;
  int peer;
  uint64_t tag;
  void* buf;
  size_t bytes;
};

Status Exchange(transport::Transport* t, const std::vector<Op>& ops, transport::Deadline deadline,
                Scratch* scratch) {
  if (ops.empty()) return Status::Ok();
  uint8_t* live = nullptr;
  transport::Request* req = scratch->Requests(ops.size(), &live);
  Status st;
  for (size_t i = 0; i < ops.size() && st.ok(); ++i) {
    const Op& op = ops[i];
    st = op.send ? t->Isend(op.peer, op.tag, op.buf, op.bytes, &req[i])
                 : t->Irecv(op.peer, op.tag, op.buf, op.bytes, &req[i]);
    live[i] = st.ok();
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!live[i]) continue;
    if (st.ok()) st = t->Wait(&req[i], deadline);
    if (!st.ok()) t->Cancel(&req[i]);
    live[i] = 0;
  }
  return st;
}

}  // namespace

Status CheckHierarchical(const AllReduceOptions& o, Rotation asked, DType dtype, size_t count,
                         int ranks, const TuneTable& table) {
  const HostLayout L(ranks, int(o.ranks_per_host));  // <= 2047 shards (the option's range): tags fit
  if (asked != Rotation::kHadamard || L.hosts < 2) return Status::Ok();
  for (int s = 0; s < L.Shards(); ++s) {
    const Range r = ShardRange(o, count, L, s);
    if (r.count == 0) continue;
    // Every inner plan counts as the caller's choice: an asked-for rotation is refused, never
    // dropped, where a shard's plan has an unquantized f16 hop.
    const Plan plan = SelectPlan(InnerOptions(o), dtype, r.count, L.hosts, table);
    bool rotate;
    if (!PlanRotation(plan, true, asked, plan.algorithm, &rotate).ok())
      return InvalidArgument("rotation hadamard with f16 data needs every hop across hosts "
                             "quantized (an unquantized f16 hop could overflow in the rotated "
                             "domain): use inner phases rs+ag, or bf16 or f32 data");
  }
  return Status::Ok();
}

uint64_t HierarchicalWireBytes(const AllReduceOptions& o, DType dtype, size_t count, int rank,
                               int ranks, const TuneTable& table) {
  const HostLayout L(ranks, int(o.ranks_per_host));
  const int host = L.HostOf(rank), local = rank - L.First(host), rh = L.Size(host);
  uint64_t bytes = 0;
  for (int s = 0; s < L.Shards(); ++s) {
    const Range r = ShardRange(o, count, L, s);
    if (r.count == 0) continue;
    const bool mine = s % rh == local;
    if (!mine) bytes += r.count * DTypeSize(dtype);  // step 1
    if (!mine) continue;
    bytes += uint64_t(rh - 1) * r.count * DTypeSize(dtype);  // step 3
    if (L.hosts > 1) {
      const Plan p = SelectPlan(InnerOptions(o), dtype, r.count, L.hosts, table);
      bytes += PlanWireBytes(p, host, L.hosts, o.microshards ? o.microshards : 4);
    }
  }
  return bytes;
}

Status ExecuteHierarchical(const AllReduceOptions& o, Rotation asked, const RunArgs& args,
                           const TuneTable& table, Scratch* inner, Scratch* own) {
  transport::Transport* t = args.transport;
  const HostLayout L(t->size(), int(o.ranks_per_host));
  const int me = t->rank(), host = L.HostOf(me), local = me - L.First(host), rh = L.Size(host);
  const size_t es = DTypeSize(args.dtype);
  const auto* send = static_cast<const uint8_t*>(args.send);
  auto* recv = static_cast<uint8_t*>(args.recv);

  // Buffers: for every shard this rank owns, the contributions of the other rh - 1 ranks of
  // its host (in the dtype), then one f32 sum.
  size_t in_bytes = 0, max_shard = 0;
  for (int s = 0; s < L.Shards(); ++s) {
    const Range r = ShardRange(o, args.count, L, s);
    max_shard = std::max(max_shard, r.count);
    if (s % rh == local) in_bytes += size_t(rh - 1) * r.count * es;
  }
  const size_t in_span = (in_bytes + 63) & ~size_t(63);
  uint8_t* in_base = own->Bytes(in_span + max_shard * sizeof(float) + 64);
  auto* acc = reinterpret_cast<float*>(in_base + in_span);

  // Step 1: contributions to their owners.
  std::vector<Op> ops;
  {
    uint8_t* i_next = in_base;
    for (int s = 0; s < L.Shards(); ++s) {
      const Range r = ShardRange(o, args.count, L, s);
      if (r.count == 0 || rh == 1) continue;
      const uint64_t tag = args.tag_base | kIntraTag | (uint64_t(s) << 1);
      if (s % rh != local) {
        ops.push_back({true, L.Owner(host, s), tag, const_cast<uint8_t*>(send + r.begin * es),
                       r.count * es});
      } else {
        for (int l = 0; l < rh; ++l) {
          if (l == local) continue;
          ops.push_back({false, L.First(host) + l, tag, i_next, r.count * es});
          i_next += r.count * es;
        }
      }
    }
  }
  Status st = Exchange(t, ops, args.deadline, own);
  if (!st.ok()) return st;

  // Step 1's sums and step 2, shard by shard.
  const uint8_t* i_next = in_base;
  for (int s = 0; s < L.Shards(); ++s) {
    const Range r = ShardRange(o, args.count, L, s);
    if (r.count == 0 || s % rh != local) continue;
    // The host's sum in local-rank order, in f32: acc <- x_0, then acc <- acc + x_l
    // (elementwise: on the codec threads, each part of the shard on its own).
    const codec::WireSpec raw{codec::RawFormatOf(args.dtype), 0};
    uint8_t* out = recv + r.begin * es;
    ForEachPart(args.pool, 1, r.count, PartCount(args.pool, r.count), [&](Range p, size_t) {
      const uint8_t* next = i_next;
      for (int l = 0; l < rh; ++l) {
        const bool own_turn = l == local;
        const uint8_t* x = (own_turn ? send + r.begin * es : next) + p.begin * es;
        if (l == 0) codec::Convert(args.dtype, x, p.count, DType::kFloat32, acc + p.begin);
        else codec::DecodeAccumulate(raw, x, p.count, DType::kFloat32, acc + p.begin, acc + p.begin);
        if (!own_turn) next += r.count * es;
      }
      codec::Convert(DType::kFloat32, acc + p.begin, p.count, args.dtype, out + p.begin * es);
    });
    i_next += size_t(rh - 1) * r.count * es;
    if (L.hosts < 2) continue;

    std::vector<int> members(size_t(L.hosts));
    for (int h = 0; h < L.hosts; ++h) members[size_t(h)] = L.Owner(h, s);
    transport::SubTransport sub(t, std::move(members), host);
    const Plan plan = SelectPlan(InnerOptions(o), args.dtype, r.count, L.hosts, table);
    RunArgs in = args;
    in.transport = &sub;
    in.send = out;
    in.recv = out;
    in.count = r.count;
    in.tag_base = InnerTagBase(args.tag_base, s);
    in.element_offset = args.element_offset + r.begin;
    bool rotate;  // CheckHierarchical refused what PlanRotation refuses, on every rank
    st = PlanRotation(plan, args.rotation.block != 0, asked, plan.algorithm, &rotate);
    if (!st.ok()) return st;
    if (!rotate) in.rotation = codec::RotationSpec{};
    st = Execute(plan, in, inner);
    if (!st.ok()) return st;
  }

  // Step 3: the finished shards to the host's other ranks.
  ops.clear();
  for (int s = 0; s < L.Shards() && rh > 1; ++s) {
    const Range r = ShardRange(o, args.count, L, s);
    if (r.count == 0) continue;
    const uint64_t tag = args.tag_base | kIntraTag | (uint64_t(s) << 1) | 1;
    uint8_t* buf = recv + r.begin * es;
    if (s % rh == local) {
      for (int l = 0; l < rh; ++l)
        if (l != local) ops.push_back({true, L.First(host) + l, tag, buf, r.count * es});
    } else {
      ops.push_back({false, L.Owner(host, s), tag, buf, r.count * es});
    }
  }
  return Exchange(t, ops, args.deadline, own);
}

}  // namespace equarx::algo
