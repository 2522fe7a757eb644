// equarx shared-memory transport — the segment, its rings and the waits (see shm_transport.h).
#include "transport/shm/shm_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "transport/socket/crypto.h"  // OsRandom
#include "transport/stream/stream_transport.h"

namespace equarx::transport {
namespace {

constexpr uint64_t kMagic = 0x657175617278534dull;  // "equarxSM"
constexpr int kSliceMs = 50;                         // longest sleep between liveness checks

static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the rings need address-free atomics");

struct alignas(64) Header {
  uint64_t magic;
  uint64_t nonce[2];
  uint64_t size;
  uint64_t ring_bytes;
};
struct alignas(64) Slot {  // one per rank
  std::atomic<uint32_t> bell;      // bumped by whoever moved one of this rank's rings
  std::atomic<uint32_t> sleeping;  // 1 while this rank may be in futex_wait on `bell`
};
struct alignas(64) RingEnd {
  std::atomic<uint64_t> index;   // head (bytes ever written) or tail (bytes ever read)
  std::atomic<uint32_t> closed;  // this end was closed: the writer's or the reader's
};
struct Ring {
  RingEnd head;  // the writer's end
  RingEnd tail;  // the reader's end
};

size_t Align64(size_t x) { return (x + 63) & ~size_t(63); }

// Header | a slot per rank | ring ends for every (from, to) | data of the n(n-1) rings, one per
// ordered pair of distinct members (PairIndex).
struct Layout {
  size_t slots, rings, data, total;
  Layout(size_t n, size_t ring_bytes) {
    slots = Align64(sizeof(Header));
    rings = slots + n * sizeof(Slot);
    data = Align64(rings + n * n * sizeof(Ring));
    total = data + n * (n > 0 ? n - 1 : 0) * ring_bytes;
  }
};
size_t PairIndex(int from, int to, int n) {
  return size_t(from) * size_t(n - 1) + size_t(to < from ? to : to - 1);
}

long Futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, ts, nullptr, 0);
}

std::string ErrnoText(int err) { return std::strerror(err); }

// What every rank publishes at set-up. Rank 0's also names the segment.
struct Card {
  uint64_t magic;
  int32_t ok;  // 0: this rank failed (error says why)
  int32_t pid;
  uint64_t pidns;  // inode of /proc/self/ns/pid
  char boot_id[40];
  char segment[48];  // rank 0: the segment's name
  uint64_t nonce[2];  // rank 0: the nonce in the segment's header
  char error[160];
};

uint64_t PidNamespace() {
  struct stat st{};
  return stat("/proc/self/ns/pid", &st) == 0 ? uint64_t(st.st_ino) : 0;
}

}  // namespace

void BootId(char* out, size_t n) {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string s;
  std::getline(f, s);
  std::snprintf(out, n, "%s", s.c_str());
}

namespace {

// The mapping, unmapped when the last user goes.
struct Mapping {
  void* base = MAP_FAILED;
  size_t bytes = 0;
  ~Mapping() {
    if (base != MAP_FAILED) munmap(base, bytes);
  }
};

// The streams of the members of one segment. Peers are named by their rank in the whole
// group (`size` ranks); the segment's rings are indexed by the members' positions.
class ShmStreamsImpl final : public ShmStreams {
 public:
  ShmStreamsImpl(int rank, int size, const std::vector<int>& members, std::unique_ptr<Mapping> map,
                 std::vector<int> pids)
      : size_(size), local_(size_t(size), -1), global_(members), map_(std::move(map)),
        pids_(std::move(pids)), pidfds_(size_t(size), -1), dead_(size_t(size), 0), closed_(size_t(size), 0) {
    for (size_t i = 0; i < members.size(); ++i) local_[size_t(members[i])] = int(i);
    me_ = local_[size_t(rank)];
    auto* base = static_cast<uint8_t*>(map_->base);
    const Header* h = reinterpret_cast<const Header*>(base);
    ring_bytes_ = h->ring_bytes;
    n_ = int(members.size());
    const Layout l(size_t(n_), ring_bytes_);
    slots_ = reinterpret_cast<Slot*>(base + l.slots);
    rings_ = reinterpret_cast<Ring*>(base + l.rings);
    data_ = base + l.data;
    for (int p : members) {
      if (p == rank || pids_[size_t(p)] == getpid()) continue;  // threads as ranks: one process
#ifdef SYS_pidfd_open
      pidfds_[size_t(p)] = int(syscall(SYS_pidfd_open, pids_[size_t(p)], 0));
#endif
    }
  }
  ~ShmStreamsImpl() override {
    for (int p : global_)
      if (local_[size_t(p)] != me_) Close(p);
    for (int fd : pidfds_)
      if (fd >= 0) close(fd);
  }
  int size() const override { return size_; }
  const char* name() const override { return "shared-memory"; }

  void Sleeping(bool on) override {
    slots_[me_].sleeping.store(on ? 1 : 0, std::memory_order_seq_cst);
    // Pairs with Notify's bell increment: a ring moved before the flag was seen is visible
    // to the Scan that follows.
    if (on) (void)slots_[me_].bell.load(std::memory_order_seq_cst);
  }
  void OnWake(std::function<void(int)> wake) override { wake_ = std::move(wake); }
  void MarkGone(int peer) override { dead_[size_t(peer)] = 1; }

  Io Write(int peer, const Piece* pieces, int n, size_t* written, std::string* why) override {
    Ring& r = ring(me_, local_[size_t(peer)]);
    if (r.tail.closed.load(std::memory_order_acquire)) return Closed(peer, "closed its end", why);
    if (dead_[size_t(peer)]) return Closed(peer, "", why);  // looked at by Wait, once per slice
    const uint64_t head = r.head.index.load(std::memory_order_relaxed);  // ours alone
    const uint64_t tail = r.tail.index.load(std::memory_order_acquire);
    if (head - tail > ring_bytes_) return Corrupt(peer, why);
    size_t room = size_t(ring_bytes_ - (head - tail));
    if (room == 0) return Io::kWouldBlock;
    uint8_t* data = ring_data(me_, local_[size_t(peer)]);
    size_t w = 0;
    for (int i = 0; i < n && room > 0; ++i) {
      const size_t k = std::min(room, pieces[i].bytes);
      Copy(data, head + w, pieces[i].data, k, /*into_ring=*/true);
      w += k;
      room -= k;
    }
    if (w == 0) return Io::kWouldBlock;
    r.head.index.store(head + w, std::memory_order_release);
    Notify(peer);
    *written = w;
    return Io::kOk;
  }

  Io Read(int peer, void* dst, size_t want, size_t* got, std::string* why) override {
    Ring& r = ring(local_[size_t(peer)], me_);
    // The closed flag and death are read before the head: what was sent before either is
    // still delivered.
    const bool ended = r.head.closed.load(std::memory_order_acquire) != 0;
    const bool dead = !ended && dead_[size_t(peer)];  // looked at by Wait, once per slice
    const uint64_t head = r.head.index.load(std::memory_order_acquire);
    const uint64_t tail = r.tail.index.load(std::memory_order_relaxed);  // ours alone
    if (head - tail > ring_bytes_) return Corrupt(peer, why);
    const size_t avail = size_t(head - tail);
    if (avail == 0) {
      if (ended) return Closed(peer, "closed its end", why);
      if (dead) return Closed(peer, "", why);
      return Io::kWouldBlock;
    }
    const size_t k = std::min(avail, want);
    Copy(ring_data(local_[size_t(peer)], me_), tail, dst, k, /*into_ring=*/false);
    r.tail.index.store(tail + k, std::memory_order_release);
    Notify(peer);
    *got = k;
    return Io::kOk;
  }

  void Wait(const std::vector<Interest>& interest, int timeout_ms, std::vector<Ready>* ready) override {
    const auto until = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    Slot& me = slots_[me_];
    for (;;) {
      me.sleeping.store(1, std::memory_order_seq_cst);
      const uint32_t seen = me.bell.load(std::memory_order_seq_cst);
      Scan(interest, ready);
      const auto now = Clock::now();
      if (!ready->empty() || now >= until) {
        me.sleeping.store(0, std::memory_order_relaxed);
        return;
      }
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(until - now).count();
      const long us = long(std::min<int64_t>(left, kSliceMs * 1000));
      timespec ts{us / 1000000, (us % 1000000) * 1000};
      Futex(&me.bell, FUTEX_WAIT, seen, &ts);  // returns at once if the bell moved since `seen`
      me.sleeping.store(0, std::memory_order_relaxed);
      last_check_ = {};  // a slice passed: look at the peers' processes again
    }
  }

  void Close(int peer) override {
    if (closed_[size_t(peer)]) return;
    closed_[size_t(peer)] = 1;
    const int l = local_[size_t(peer)];
    ring(me_, l).head.closed.store(1, std::memory_order_release);
    ring(l, me_).tail.closed.store(1, std::memory_order_release);
    Notify(peer);
  }

  void Scan(const std::vector<Interest>& interest, std::vector<Ready>* ready) override {
    const auto now = Clock::now();
    const bool look = now - last_check_ >= std::chrono::milliseconds(kSliceMs);
    if (look) last_check_ = now;
    for (const Interest& in : interest) {
      const int p = in.peer;
      Ring& out = ring(me_, local_[size_t(p)]);
      Ring& inr = ring(local_[size_t(p)], me_);
      const bool ended = inr.head.closed.load(std::memory_order_acquire) ||
                         out.tail.closed.load(std::memory_order_acquire);
      const bool gone = ended || (look ? Dead(p) : dead_[size_t(p)] != 0);
      Ready r;
      r.peer = p;
      r.writable = in.write && (gone || out.head.index.load(std::memory_order_relaxed) -
                                                out.tail.index.load(std::memory_order_acquire) <
                                            ring_bytes_);
      r.readable = in.read && (gone || inr.head.index.load(std::memory_order_acquire) !=
                                           inr.tail.index.load(std::memory_order_relaxed));
      if (gone && !in.read) {
        r.hangup = true;
        std::string why;
        Closed(p, ended ? "closed its end" : "", &why);
        r.why = why;
      }
      if (r.writable || r.readable || r.hangup) ready->push_back(std::move(r));
    }
  }

 private:
  Ring& ring(int from, int to) { return rings_[size_t(from) * size_t(n_) + size_t(to)]; }
  uint8_t* ring_data(int from, int to) {
    return data_ + PairIndex(from, to, n_) * ring_bytes_;
  }

  // Copies k bytes between `buf` and the ring at stream position `pos`, wrapping around.
  void Copy(uint8_t* ring_base, uint64_t pos, const void* buf, size_t k, bool into_ring) {
    const size_t at = size_t(pos % ring_bytes_);
    const size_t first = std::min(k, size_t(ring_bytes_) - at);
    auto* b = static_cast<uint8_t*>(const_cast<void*>(buf));
    if (into_ring) {
      std::memcpy(ring_base + at, b, first);
      std::memcpy(ring_base, b + first, k - first);
    } else {
      std::memcpy(b, ring_base + at, first);
      std::memcpy(b + first, ring_base, k - first);
    }
  }

  // Tells `peer` that one of its rings moved: its doorbell, and a wake-up if it sleeps.
  void Notify(int peer) {
    Slot& s = slots_[local_[size_t(peer)]];
    s.bell.fetch_add(1, std::memory_order_seq_cst);
    if (s.sleeping.load(std::memory_order_seq_cst)) {
      Futex(&s.bell, FUTEX_WAKE, INT_MAX, nullptr);
      if (wake_) wake_(peer);  // a peer that sleeps in poll() instead (host_transport.cc)
    }
  }

  // Indices no correct peer writes: the ring cannot be trusted further (never read or written
  // outside it).
  Io Corrupt(int peer, std::string* why) {
    *why = "protocol error: the shared-memory ring with rank " + std::to_string(peer) + " holds impossible indices";
    return Io::kClosed;
  }

  Io Closed(int peer, const char* how, std::string* why) {
    if (*how) {
      *why = "rank " + std::to_string(peer) + " " + how + " of the shared-memory ring";
    } else {
      *why = "rank " + std::to_string(peer) + "'s process (pid " + std::to_string(pids_[size_t(peer)]) +
             ") is gone";
    }
    return Io::kClosed;
  }

  // Whether the peer's process has exited. Looked at no more than once per slice.
  bool Dead(int peer) {
    if (dead_[size_t(peer)]) return true;
    const int fd = pidfds_[size_t(peer)];
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) == 1) dead_[size_t(peer)] = 1;  // a pidfd is readable once it exits
    } else if (pids_[size_t(peer)] != getpid() && kill(pids_[size_t(peer)], 0) != 0 && errno == ESRCH) {
      dead_[size_t(peer)] = 1;
    }
    return dead_[size_t(peer)] != 0;
  }

  const int size_;
  std::vector<int> local_;   // global rank -> position in the segment (-1: not a member)
  std::vector<int> global_;  // position -> global rank
  int me_ = 0, n_ = 0;
  std::unique_ptr<Mapping> map_;
  std::function<void(int)> wake_;
  std::vector<int> pids_;
  std::vector<int> pidfds_;
  std::vector<uint8_t> dead_;
  std::vector<uint8_t> closed_;
  uint64_t ring_bytes_ = 0;
  Slot* slots_ = nullptr;
  Ring* rings_ = nullptr;
  uint8_t* data_ = nullptr;
  Clock::time_point last_check_{};
};

size_t RingBytes(const ShmOptions& o, int size) {
  if (o.ring_bytes) return o.ring_bytes;
  const size_t pairs = size_t(size) * size_t(size > 1 ? size - 1 : 1);
  size_t r = size_t(16) << 20;
  while (r > (size_t(64) << 10) && pairs * r > (size_t(64) << 20)) r >>= 1;
  return r;
}

// Rank 0: creates, sizes and maps the segment and writes its header. The segment's pages are
// reserved up front (posix_fallocate), so that a full /dev/shm is a clear error here and never
// a SIGBUS in the middle of a call; with the default ring size (`shrink`) the rings are made
// smaller until the segment fits in half of what /dev/shm has free.
Status CreateSegment(int size, size_t ring_bytes, bool shrink, Card* card, Mapping* map, std::string* name) {
  uint8_t rnd[16];
  EQUARX_RETURN_IF_ERROR(OsRandom(rnd, sizeof rnd));
  char n[48];
  int len = std::snprintf(n, sizeof n, "/equarx-%d-", int(getpid()));
  for (uint8_t b : rnd) len += std::snprintf(n + len, sizeof n - size_t(len), "%02x", b);
  *name = n;
  EQUARX_RETURN_IF_ERROR(OsRandom(card->nonce, sizeof card->nonce));
  const int fd = shm_open(n, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return Internal("shm_open(" + *name + "): " + ErrnoText(errno));
  struct statvfs vfs{};
  const size_t avail = fstatvfs(fd, &vfs) == 0 ? size_t(vfs.f_bavail) * size_t(vfs.f_frsize) : SIZE_MAX;
  while (shrink && ring_bytes > (size_t(64) << 10) && Layout(size_t(size), ring_bytes).total > avail / 2)
    ring_bytes >>= 1;
  const Layout l(size_t(size), ring_bytes);
  int err = ftruncate(fd, off_t(l.total)) != 0 ? errno : posix_fallocate(fd, 0, off_t(l.total));
  if (err != 0) {
    close(fd);
    shm_unlink(n);
    return InvalidArgument("reserving " + std::to_string(l.total) + " bytes of shared memory for " +
                           std::to_string(size) + " ranks' rings (" + std::to_string(ring_bytes) +
                           " bytes each; " + std::to_string(avail) + " bytes free in /dev/shm): " + ErrnoText(err) +
                           ". Enlarge /dev/shm (e.g. docker --shm-size), or use EQUARX_DATA_PATH=sockets");
  }
  map->bytes = l.total;
  map->base = mmap(nullptr, l.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (map->base == MAP_FAILED) {
    shm_unlink(n);
    return Internal("mapping the shared-memory segment: " + ErrnoText(e));
  }
  auto* h = static_cast<Header*>(map->base);
  h->size = uint64_t(size);
  h->ring_bytes = ring_bytes;
  std::memcpy(h->nonce, card->nonce, sizeof h->nonce);
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
  std::snprintf(card->segment, sizeof card->segment, "%s", n);
  return Status::Ok();
}

// Other ranks: map rank 0's segment and check that it is the one rank 0 described.
Status OpenSegment(int size, const Card& root, Mapping* map) {
  const std::string name(root.segment, strnlen(root.segment, sizeof root.segment));
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0)
    return InvalidArgument("cannot open rank 0's shared-memory segment " + name + " (" + ErrnoText(errno) +
                           "): not on rank 0's host, or not sharing its /dev/shm");
  struct stat st{};
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || size_t(st.st_size) < sizeof(Header)) {
    close(fd);
    return InvalidArgument("rank 0's shared-memory segment " + name + " is not ours or too small");
  }
  map->bytes = size_t(st.st_size);
  map->base = mmap(nullptr, map->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (map->base == MAP_FAILED) return Internal("mapping rank 0's shared-memory segment: " + ErrnoText(e));
  const auto* h = static_cast<const Header*>(map->base);
  if (h->magic != kMagic || std::memcmp(h->nonce, root.nonce, sizeof h->nonce) != 0 ||
      h->size != uint64_t(size) || h->ring_bytes == 0 || Layout(size_t(size), h->ring_bytes).total != map->bytes)
    return InvalidArgument("shared-memory segment " + name + " is not the one rank 0 created");
  return Status::Ok();
}

void SetError(const Status& st, Card* c) {
  c->ok = st.ok();
  if (!st.ok()) std::snprintf(c->error, sizeof c->error, "%s", st.message().c_str());
}

// Gathers the members' cards; a failed member is reported (by its rank) on every member.
Status Gather(int li, const std::vector<int>& members, const AllGather& allgather, const Card& mine,
              const Status& my_status, std::vector<Card>* all) {
  EQUARX_RETURN_IF_ERROR(allgather(&mine, sizeof mine, all->data()));
  for (size_t i = 0; i < all->size(); ++i) {
    const Card& c = (*all)[i];
    if (c.magic != kMagic)
      return Internal("shared-memory setup: garbled card from rank " + std::to_string(members[i]));
    if (!c.ok) {
      if (int(i) == li) return my_status;
      return InvalidArgument("shared-memory setup failed on rank " + std::to_string(members[i]) + ": " +
                             std::string(c.error, strnlen(c.error, sizeof c.error)));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CreateShmStreams(int rank, int size, const std::vector<int>& members, const AllGather& allgather,
                        const ShmOptions& options, std::unique_ptr<ShmStreams>* out) {
  const auto it = std::find(members.begin(), members.end(), rank);
  if (size < 1 || rank < 0 || rank >= size || it == members.end() || !std::is_sorted(members.begin(), members.end()) ||
      members.front() < 0 || members.back() >= size)
    return InvalidArgument("shared-memory transport: bad rank, size or members");
  const int li = int(it - members.begin()), n = int(members.size());
  const size_t ring_bytes = RingBytes(options, n);
  // 1. Who and where: the first member creates the segment first and names it in its card.
  // Its ring size is the group's. Errors go through the gather, so that no rank waits for
  // another.
  Card me{};
  me.magic = kMagic;
  me.pid = int32_t(getpid());
  me.pidns = PidNamespace();
  BootId(me.boot_id, sizeof me.boot_id);
  auto map = std::make_unique<Mapping>();
  std::string name;
  Status st;
  if (li == 0) {
    st = ring_bytes < 64 || ring_bytes > (size_t(1) << 30)
             ? InvalidArgument("shared-memory transport: ring_bytes " + std::to_string(ring_bytes) +
                               " is outside [64, 2^30]")
             : CreateSegment(n, ring_bytes, options.ring_bytes == 0, &me, map.get(), &name);
  }
  SetError(st, &me);
  std::vector<Card> cards(static_cast<size_t>(n));
  Status gathered = Gather(li, members, allgather, me, st, &cards);
  if (!gathered.ok()) {
    if (!name.empty()) shm_unlink(name.c_str());
    return gathered;
  }
  // 2. Every other member maps it, after checking it shares the first member's host.
  st = Status::Ok();
  if (li != 0) {
    const Card& root = cards[0];
    if (std::strncmp(root.boot_id, me.boot_id, sizeof me.boot_id) != 0 || root.pidns != me.pidns)
      st = InvalidArgument("rank " + std::to_string(rank) + " is not on rank " + std::to_string(members[0]) +
                           "'s host (another boot or PID namespace)");
    else
      st = OpenSegment(n, root, map.get());
  }
  Card joined{};
  joined.magic = kMagic;
  SetError(st, &joined);
  std::vector<Card> verdicts(static_cast<size_t>(n));
  gathered = Gather(li, members, allgather, joined, st, &verdicts);
  if (!name.empty()) shm_unlink(name.c_str());  // every member has mapped it (or given up)
  EQUARX_RETURN_IF_ERROR(gathered);
  std::vector<int> pids(static_cast<size_t>(size), 0);
  for (size_t i = 0; i < cards.size(); ++i) pids[size_t(members[i])] = cards[i].pid;
  *out = std::make_unique<ShmStreamsImpl>(rank, size, members, std::move(map), std::move(pids));
  return Status::Ok();
}

Status CreateShmTransport(int rank, int size, const AllGather& allgather, const ShmOptions& options,
                          std::unique_ptr<Transport>* out) {
  if (size < 1 || rank < 0 || rank >= size) return InvalidArgument("shared-memory transport: bad rank or size");
  std::vector<int> all(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) all[size_t(r)] = r;
  std::unique_ptr<ShmStreams> streams;
  EQUARX_RETURN_IF_ERROR(CreateShmStreams(rank, size, all, allgather, options, &streams));
  StreamLimits limits;
  limits.max_message_bytes = options.max_message_bytes;
  limits.max_unexpected_bytes = options.max_unexpected_bytes;
  *out = MakeStreamTransport(rank, std::move(streams), limits);
  (*out)->SetHosts(size, size);  // every rank on this host
  return Status::Ok();
}

}  // namespace equarx::transport
