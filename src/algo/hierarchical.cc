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
// The three steps run as a pipeline over chunks of each shard (at least 1 MiB of the dtype per
// other host each, 1 MiB on a single host, at most 32, cut on the block grid): every step-1
// and step-3 message of a chunk group (below) is posted at its start, and the owner, chunk by
// chunk, waits for the chunk's contributions, sums them, runs the chunk's inner AllReduce and
// posts the chunk's step-3 sends. The transport moves the posted intra-host messages while
// the owner waits inside the inner AllReduce, so the shared-memory passes overlap the bytes
// between hosts instead of running before and after them. (In-place calls post a step-3
// receive only once the step-1 send of the same bytes has completed.)
//
// Chunk groups (bounded scratch): every step-1 message has its own buffer, which for all chunks
// at once is (R_h - 1) times the rank's shards. The chunks are run in groups of G consecutive
// chunk indices (every shard's chunks c with c / G == j in group j), one group after the other,
// each posting, running and finishing its own messages in the buffers of one group, so that
// this schedule's buffers and the inner calls' stay within ScratchBound (half each; the inner
// plans get half as their floor). G is a function of the layout alone, the chunks are the
// ones a single group would run, and so are the bits. On a single host the shards are cut
// into chunks too (there is no inner call, and the host's sums are elementwise: the bits do
// not depend on the cut).
//
// Every rank's result is bitwise identical: a shard's inner AllReduce gives its members the
// same bytes, and step 3 copies them. Error: the host sums are f32 sums of R_h values (one
// rounding each), rounded once to the dtype; then the inner algorithm's error over H
// contributions (the host sums), as if the hosts were its ranks. A rotation runs inside the
// inner step, on rotation blocks numbered from the whole tensor's element 0.
//
// Tags (low 32 bits; the call's sequence number is the high half): the inner calls of shard s
// use (s + 1) << 20 + the executor's own tags (< 2^20), one chunk after the other (messages
// match in posting order); steps 1 and 3 use bit 31 | chunk << 12 | s << 1 | step 3.
#include "algo/hierarchical.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "algo/parts.h"
#include "algo/requests.h"
#include "algo/scratch.h"
#include "codec/codec.h"
#include "transport/sub_transport.h"

namespace equarx::algo {

HostLayout::HostLayout(int n, int r) : ranks(n), per_host(std::max(1, r)) {
  hosts = (ranks + per_host - 1) / per_host;
}

int HostLayout::Size(int host) const { return std::min(per_host, ranks - First(host)); }

namespace {

constexpr uint64_t kIntraTag = uint64_t(1) << 31;
constexpr size_t kChunkBytes = size_t(1) << 20;  // the pipeline's unit, in bytes of the dtype
constexpr size_t kMaxChunks = 32;                // chunk index < 2^19 fits its tag bits

uint64_t InnerTagBase(uint64_t tag_base, int shard) { return tag_base | (uint64_t(shard + 1) << 20); }

uint64_t IntraTag(uint64_t tag_base, int shard, size_t chunk, bool step3) {
  return tag_base | kIntraTag | (uint64_t(chunk) << 12) | (uint64_t(shard) << 1) | (step3 ? 1 : 0);
}

Range ShardRange(const AllReduceOptions& o, size_t count, const HostLayout& L, int s) {
  return SplitBlocks(Range{0, count}, o.block, size_t(L.Shards()), size_t(s));
}

// How many chunks the pipeline cuts a shard into: a function of the shard and the layout
// alone, so every rank (and the byte count) cuts it alike. A chunk's inner call has steps and
// messages in proportion to the hosts (a ring's 2(H - 1) steps, two_shot's 2(H - 1) messages),
// so a chunk holds at least kChunkBytes per other host: the latency stays a fixed share of a
// chunk's time, and beyond a few hundred hosts a shard is one chunk.
size_t ChunkCount(const AllReduceOptions& o, DType dtype, Range shard, const HostLayout& L) {
  if (shard.count == 0) return 1;
  const size_t blocks = (shard.count + o.block - 1) / o.block;
  const size_t by_bytes = shard.count * DTypeSize(dtype) / (kChunkBytes * size_t(std::max(1, L.hosts - 1)));
  return std::max<size_t>(1, std::min({by_bytes, kMaxChunks, blocks}));
}

Range ChunkRange(const AllReduceOptions& o, Range shard, size_t chunks, size_t c) {
  return SplitBlocks(shard, o.block, chunks, c);
}

// The intra-host messages of one chunk group (steps 1 and 3), posted and waited on one by one
// (their requests: requests.h; on any failure every live one is cancelled).
class Ops {
 public:
  Ops(transport::Transport* t, const std::vector<IntraOp>& ops, transport::Deadline deadline, Scratch* scratch,
      std::vector<uint8_t>* posted)
      : ops_(ops), reqs_(t, scratch, ops.size(), deadline), posted_(*posted) {
    posted_.assign(ops_.size(), 0);
  }
  const IntraOp& operator[](size_t i) const { return ops_[i]; }
  size_t size() const { return ops_.size(); }

  Status Post(size_t i) {
    if (posted_[i]) return Status::Ok();
    const IntraOp& op = ops_[i];
    posted_[i] = 1;
    return op.send ? reqs_.Send(i, op.peer, op.tag, op.buf, op.bytes) : reqs_.Recv(i, op.peer, op.tag, op.buf, op.bytes);
  }
  Status Wait(size_t i) {
    Status st = ops_[i].after >= 0 ? Wait(size_t(ops_[i].after)) : Status::Ok();
    if (st.ok()) st = Post(i);
    return st.ok() ? reqs_.Wait(i) : st;
  }
  // Posts every deferred receive whose send has completed (without blocking).
  Status PostReady() {
    for (size_t i = 0; i < ops_.size(); ++i) {
      const long a = ops_[i].after;
      if (posted_[i] || a < 0 || !posted_[size_t(a)]) continue;
      Status done;
      if (!reqs_.Test(size_t(a), &done)) continue;
      if (!done.ok()) return done;
      EQUARX_RETURN_IF_ERROR(Post(i));
    }
    return Status::Ok();
  }

 private:
  const std::vector<IntraOp>& ops_;
  RequestSet reqs_;
  std::vector<uint8_t>& posted_;
};

// The chunk groups of a call (see the top of this file): the same on every rank.
struct Groups {
  size_t most_chunks = 1;  // the most chunks of any shard
  size_t per_group = 1;    // G
  size_t acc_at = 0, own_bytes = 0;  // this schedule's buffers: step-1 receives, then the sum
};

Groups GroupsOf(const AllReduceOptions& o, DType dtype, size_t count, const HostLayout& L, size_t floor) {
  const size_t es = DTypeSize(dtype);
  Groups g;
  size_t max_chunk = 0, per_index = 0;  // the largest chunk; the most step-1 bytes of a chunk index
  for (int h = 0; h < L.hosts; ++h)
    for (int l = 0; l < L.Size(h); ++l) {
      size_t bytes = 0;
      for (int s = l; s < L.Shards(); s += L.Size(h)) {
        const Range r = ShardRange(o, count, L, s);
        const size_t chunks = ChunkCount(o, dtype, r, L);
        const size_t chunk = ((r.count + o.block - 1) / o.block + chunks - 1) / chunks * o.block;  // the most
        g.most_chunks = std::max(g.most_chunks, chunks);
        max_chunk = std::max(max_chunk, chunk);
        bytes += size_t(L.Size(h) - 1) * chunk * es;
      }
      per_index = std::max(per_index, bytes);
    }
  const size_t acc = (max_chunk * sizeof(float) + 63) & ~size_t(63), half = ScratchBound(dtype, count, floor) / 2;
  g.per_group = per_index ? std::clamp<size_t>((half > acc ? half - acc : 0) / per_index, 1, g.most_chunks)
                          : g.most_chunks;
  g.acc_at = (g.per_group * per_index + 63) & ~size_t(63);
  g.own_bytes = g.acc_at + acc;
  return g;
}

// The inner calls' scratch floor: half the call's bound (see the top).
size_t InnerFloor(DType dtype, size_t count, size_t floor) { return ScratchBound(dtype, count, floor) / 2; }

}  // namespace

std::vector<Range> HierarchicalChunks(const AllReduceOptions& o, DType dtype, size_t count, int ranks, int s) {
  const HostLayout L(ranks, int(o.ranks_per_host));
  const Range r = ShardRange(o, count, L, s);
  const size_t chunks = ChunkCount(o, dtype, r, L);
  std::vector<Range> out;
  for (size_t c = 0; c < chunks; ++c) out.push_back(ChunkRange(o, r, chunks, c));
  return out;
}

Status CheckHierarchical(const Resolved& res, DType dtype, size_t count, int ranks) {
  const AllReduceOptions& o = res.options;
  const HostLayout L(ranks, int(o.ranks_per_host));  // ranks_per_host shards at most (the option's range): tags fit
  if (!res.rotation_asked || L.hosts < 2) return Status::Ok();
  for (int s = 0; s < L.Shards(); ++s) {
    const Range r = ShardRange(o, count, L, s);
    const size_t chunks = ChunkCount(o, dtype, r, L);
    for (size_t c = 0; c < chunks && r.count > 0; ++c) {
      Plan plan;
      bool rotate;
      EQUARX_RETURN_IF_ERROR(InnerPlan(res, dtype, ChunkRange(o, r, chunks, c).count, L.hosts, &plan, &rotate));
    }
  }
  return Status::Ok();
}

uint64_t HierarchicalWireBytes(const Resolved& res, DType dtype, size_t count, int rank, int ranks, size_t floor) {
  const AllReduceOptions& o = res.options;
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
    if (L.hosts < 2) continue;
    const size_t chunks = ChunkCount(o, dtype, r, L);
    for (size_t c = 0; c < chunks; ++c) {
      Plan p;
      bool rotate;
      (void)InnerPlan(res, dtype, ChunkRange(o, r, chunks, c).count, L.hosts, &p, &rotate);
      bytes += PlanWireBytes(p, host, L.hosts, o.microshards, InnerFloor(dtype, count, floor));
    }
  }
  return bytes;
}

Status ExecuteHierarchical(const Resolved& res, const RunArgs& args, Scratch* inner, HierarchicalScratch* own) {
  const AllReduceOptions& o = res.options;
  transport::Transport* t = args.transport;
  const HostLayout L(t->size(), int(o.ranks_per_host));
  const int me = t->rank(), host = L.HostOf(me), local = me - L.First(host), rh = L.Size(host);
  const size_t es = DTypeSize(args.dtype);
  const auto* send = static_cast<const uint8_t*>(args.send);
  auto* recv = static_cast<uint8_t*>(args.recv);
  const bool in_place = args.send == args.recv;
  const Groups G = GroupsOf(o, args.dtype, args.count, L, args.scratch_floor);

  // Buffers: for every shard this rank owns, the contributions of the other rh - 1 ranks of
  // its host to the group's chunks (in the dtype, chunk-major: chunk c's from every peer,
  // then chunk c + 1's), then one f32 sum of a chunk.
  uint8_t* in_base = own->bytes.Bytes(G.own_bytes);
  auto* acc = reinterpret_cast<float*>(in_base + G.acc_at);
  // The owners of each shard's inner call, one per host.
  own->members.resize(size_t(L.Shards()) * size_t(L.hosts));
  for (int s = 0; s < L.Shards(); ++s)
    for (int h = 0; h < L.hosts; ++h) own->members[size_t(s) * size_t(L.hosts) + size_t(h)] = L.Owner(h, s);

  Status st;
  for (size_t c0 = 0; c0 < G.most_chunks && st.ok(); c0 += G.per_group) {
    const size_t c1 = std::min(G.most_chunks, c0 + G.per_group);
    // Every message of the group's steps 1 and 3, and where each owned chunk's lie:
    // first[s * G + c - c0] is the index of its first step-1 receive (rh - 1 of them), then
    // its rh - 1 step-3 sends.
    std::vector<IntraOp>& list = own->ops;
    list.clear();
    std::vector<size_t>& first = own->first;
    first.assign(size_t(L.Shards()) * G.per_group, 0);
    uint8_t* i_next = in_base;
    for (int s = 0; s < L.Shards() && rh > 1; ++s) {
      const Range r = ShardRange(o, args.count, L, s);
      if (r.count == 0) continue;
      const size_t chunks = ChunkCount(o, args.dtype, r, L);
      const bool mine = s % rh == local;
      const int owner = L.Owner(host, s);
      for (size_t c = c0; c < std::min(c1, chunks); ++c) {
        const Range k = ChunkRange(o, r, chunks, c);
        const uint64_t tag1 = IntraTag(args.tag_base, s, c, false), tag3 = IntraTag(args.tag_base, s, c, true);
        uint8_t* out = recv + k.begin * es;
        if (!mine) {
          list.push_back({true, owner, tag1, const_cast<uint8_t*>(send + k.begin * es), k.count * es});
          list.push_back({false, owner, tag3, out, k.count * es, in_place ? long(list.size()) - 1 : -1});
          continue;
        }
        first[size_t(s) * G.per_group + (c - c0)] = list.size();
        for (int l = 0; l < rh; ++l) {
          if (l == local) continue;
          list.push_back({false, L.First(host) + l, tag1, i_next, k.count * es});
          i_next += k.count * es;
        }
        for (int l = 0; l < rh; ++l)
          if (l != local) list.push_back({true, L.First(host) + l, tag3, out, k.count * es, -1, true});
      }
    }
    Ops ops(t, list, args.deadline, &own->bytes, &own->posted);
    for (size_t i = 0; i < ops.size() && st.ok(); ++i)
      if (!ops[i].held && ops[i].after < 0) st = ops.Post(i);
    if (!st.ok()) return st;

    // Chunk by chunk: the host's sum, the inner AllReduce, the chunk to the host's other ranks.
    const codec::WireSpec raw{codec::RawFormatOf(args.dtype), 0};
    for (int s = 0; s < L.Shards(); ++s) {
      const Range r = ShardRange(o, args.count, L, s);
      if (r.count == 0 || s % rh != local) continue;
      const size_t chunks = ChunkCount(o, args.dtype, r, L);
      transport::SubTransport sub(t, std::span<const int>(own->members).subspan(size_t(s) * size_t(L.hosts), size_t(L.hosts)),
                                  host);
      for (size_t c = c0; c < std::min(c1, chunks); ++c) {
        const Range k = ChunkRange(o, r, chunks, c);
        const size_t at = rh > 1 ? first[size_t(s) * G.per_group + (c - c0)] : 0;
        for (int l = 0; l + 1 < rh && st.ok(); ++l) st = ops.Wait(at + size_t(l));
        if (!st.ok()) return st;
        // The host's sum in local-rank order, in f32: acc <- x_0, then acc <- acc + x_l
        // (elementwise: on the codec threads, each part of the chunk on its own).
        uint8_t* out = recv + k.begin * es;
        ForEachPart(args.pool, 1, k.count, PartCount(args.pool, k.count), [&](Range p, size_t) {
          size_t peer = 0;
          for (int l = 0; l < rh; ++l) {
            const uint8_t* x = l == local ? send + (k.begin + p.begin) * es
                                          : static_cast<const uint8_t*>(ops[at + peer++].buf) + p.begin * es;
            if (l == 0) codec::Convert(args.dtype, x, p.count, DType::kFloat32, acc + p.begin);
            else codec::DecodeAccumulate(raw, x, p.count, DType::kFloat32, acc + p.begin, acc + p.begin);
          }
          codec::Convert(DType::kFloat32, acc + p.begin, p.count, args.dtype, out + p.begin * es);
        });
        if (L.hosts >= 2) {
          Plan plan;
          bool rotate;  // CheckHierarchical refused what InnerPlan refuses, on every rank
          st = InnerPlan(res, args.dtype, k.count, L.hosts, &plan, &rotate);
          if (!st.ok()) return st;
          RunArgs in = args;
          in.transport = &sub;
          in.send = out;
          in.recv = out;
          in.count = k.count;
          in.tag_base = InnerTagBase(args.tag_base, s);
          in.element_offset = args.element_offset + k.begin;
          in.scratch_floor = InnerFloor(args.dtype, args.count, args.scratch_floor);
          if (!rotate) in.rotation = codec::RotationSpec{};
          st = Execute(plan, in, inner);
          if (!st.ok()) return st;
        }
        for (int l = 0; l + 1 < rh && st.ok(); ++l) st = ops.Post(at + size_t(rh - 1 + l));
        if (st.ok() && in_place) st = ops.PostReady();
        if (!st.ok()) return st;
      }
    }
    for (size_t i = 0; i < ops.size() && st.ok(); ++i) st = ops.Wait(i);
  }
  return st;
}

}  // namespace equarx::algo
