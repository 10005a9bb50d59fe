#include "shm_reducer.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <new>

#include "dp/params.hpp"
#include "dp/sys_error.hpp"
#include "reduce_kernels.hpp"

namespace dp::detail {
namespace {

// "dpshm" + layout version: a segment of another libdp version is refused.
constexpr uint64_t kMagic = 0x64707368'6d000001ULL;
// How long a barrier spins before it sleeps: peers usually arrive within
// microseconds, and a futex sleep + wake costs about as much.
std::chrono::microseconds spin_time() {
  return std::chrono::microseconds(param(Param::shm_spin_us));
}
// Sleep slice: how often a wait checks that its peers still live.
std::chrono::milliseconds slice_time() {
  return std::chrono::milliseconds(param(Param::shm_slice_ms));
}

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "atomics in shared memory must be lock-free to work across processes");

struct alignas(64) RankWord {
  std::atomic<uint64_t> seq;  // barriers this rank has reached
  std::atomic<int32_t> pid;
};

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

long futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* timeout) {
  // Not FUTEX_PRIVATE: the word is shared between processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, timeout, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

struct ShmReducer::Header {
  uint64_t magic;
  uint32_t size;
  uint32_t reserved;
  uint64_t chunk;
  alignas(64) std::atomic<uint32_t> epoch;  // bumped on every arrival: the futex word
  std::atomic<uint32_t> waiters;            // ranks asleep on epoch: wake only if any
  std::atomic<uint32_t> aborted;            // 1 + the job rank that aborted first; 0: none
};

namespace {

size_t header_bytes(int size) {
  return round_up(
      round_up(sizeof(ShmReducer::Header), 64) + static_cast<size_t>(size) * sizeof(RankWord),
      4096);
}

size_t segment_bytes(int size, size_t chunk) {
  // Two sets of (one slot per rank + the shared output).
  return header_bytes(size) + 2 * (static_cast<size_t>(size) + 1) * chunk;
}

RankWord* rank_words(ShmReducer::Header* h) {
  return reinterpret_cast<RankWord*>(reinterpret_cast<char*>(h) +
                                     round_up(sizeof(ShmReducer::Header), 64));
}

}  // namespace

size_t ShmReducer::chunk_bytes_for(int size) {
  const size_t budget = size_t{16} << 20;
  const size_t chunk = budget / (2 * (static_cast<size_t>(size) + 1));
  return std::clamp<size_t>(chunk & ~size_t{4095}, size_t{64} << 10, size_t{1} << 20);
}

ShmReducer::ShmReducer(int rank, std::vector<int> ranks, size_t chunk, void* base, size_t bytes)
    : rank_(rank),
      size_(static_cast<int>(ranks.size())),
      ranks_(std::move(ranks)),
      chunk_(chunk),
      base_(base),
      bytes_(bytes),
      hdr_(static_cast<Header*>(base)),
      data_(base ? static_cast<char*>(base) + header_bytes(size_) : nullptr),
      pidfds_(static_cast<size_t>(size_)),
      world_(size_) {}

ShmReducer::~ShmReducer() {
  if (base_) ::munmap(base_, bytes_);
}

std::shared_ptr<ShmReducer> ShmReducer::alone(int job_rank, size_t chunk) {
  return std::shared_ptr<ShmReducer>(new ShmReducer(0, {job_rank}, chunk, nullptr, 0));
}

Result<std::shared_ptr<ShmReducer>> ShmReducer::map(UniqueFd fd, int rank, std::vector<int> ranks,
                                                    size_t chunk, bool fresh) {
  const int size = static_cast<int>(ranks.size());
  const size_t bytes = segment_bytes(size, chunk);
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  const int e = errno;
  if (base == MAP_FAILED) {
    return make_error(Errc::internal, "shared memory: mmap of " + std::to_string(bytes >> 20) +
                                          " MiB failed: " + errno_text(e));
  }
  Header* h = static_cast<Header*>(base);
  if (fresh) {
    h = new (base) Header{};
    h->size = static_cast<uint32_t>(size);
    h->chunk = chunk;
    for (int r = 0; r < size; ++r) new (&rank_words(h)[r]) RankWord{};
    h->magic = kMagic;
  } else if (h->magic != kMagic || h->size != static_cast<uint32_t>(size) || h->chunk != chunk) {
    ::munmap(base, bytes);
    return make_error(Errc::internal,
                      "shared memory: the segment rank 0 created has another layout (a different "
                      "libdp version on some rank?); use one slurm-dp installation");
  }
  rank_words(h)[rank].pid.store(static_cast<int32_t>(::getpid()));
  auto r = std::shared_ptr<ShmReducer>(new ShmReducer(rank, std::move(ranks), chunk, base, bytes));
  // The creator keeps its descriptor until every peer has opened it; the rest close at once.
  if (fresh) r->share_fd_ = std::move(fd);
  return r;
}

Result<std::shared_ptr<ShmReducer>> ShmReducer::create(std::vector<int> ranks, size_t chunk) {
  const int size = static_cast<int>(ranks.size());
  // Anonymous memory, shared through its descriptor: no name in /dev/shm that
  // a crash at any point could leave behind; it is freed with its last user.
  UniqueFd fd(::memfd_create("slurm-dp-allreduce", MFD_CLOEXEC));
  if (!fd)
    return make_error(Errc::limit, "shared memory: memfd_create failed: " + errno_text(errno));
  const size_t bytes = segment_bytes(size, chunk);
  // Reserve now: touching an unbacked page of full shared memory is SIGBUS.
  if (int e = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes)); e != 0) {
    return make_error(Errc::limit, "shared memory: cannot reserve " + std::to_string(bytes >> 20) +
                                       " MiB: " + errno_text(e));
  }
  return map(std::move(fd), 0, std::move(ranks), chunk, true);
}

std::string ShmReducer::share_path() const {
  if (!share_fd_) return {};
  return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(share_fd_.get());
}

void ShmReducer::stop_sharing() { share_fd_.reset(); }

Result<std::shared_ptr<ShmReducer>> ShmReducer::open(const std::string& path, int local_rank,
                                                     std::vector<int> ranks, size_t chunk) {
  const int size = static_cast<int>(ranks.size());
  // The creator's descriptor, reopened through /proc (same user, same host).
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) {
    return make_error(Errc::internal, "shared memory: cannot open " + path +
                                          " of this host's first rank: " + errno_text(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 ||
      static_cast<size_t>(st.st_size) != segment_bytes(size, chunk)) {
    return make_error(Errc::internal, "shared memory: " + path +
                                          " has an unexpected size (a different libdp version on "
                                          "some rank?)");
  }
  return map(std::move(fd), local_rank, std::move(ranks), chunk, false);
}

void ShmReducer::set_cross_host(int world, CrossHost leader_stage) {
  world_ = world;
  leader_stage_ = std::move(leader_stage);
}

void ShmReducer::attach_peers() {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const int pid = rank_words(hdr_)[r].pid.load();
    // Readable once the process has exited; without pidfds, kill(pid, 0).
    if (pid > 0)
      pidfds_[static_cast<size_t>(r)].reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  }
}

Result<void> ShmReducer::check_peers() {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const int fd = pidfds_[static_cast<size_t>(r)].get();
    const int pid = rank_words(hdr_)[r].pid.load();
    bool gone = false;
    if (pid <= 0) continue;  // never registered: start-up made sure all did
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      gone = ::poll(&p, 1, 0) > 0;
    } else {
      gone = ::kill(pid, 0) != 0 && errno == ESRCH;
    }
    if (gone) {
      return make_error(Errc::connection, "rank " + std::to_string(ranks_[static_cast<size_t>(r)]) +
                                              " (pid " + std::to_string(pid) +
                                              ", on this host) exited");
    }
  }
  return {};
}

char* ShmReducer::slot(int set, int index) const {
  return data_ + (static_cast<size_t>(set) * (static_cast<size_t>(size_) + 1) +
                  static_cast<size_t>(index)) *
                     chunk_;
}

void ShmReducer::abort() {
  if (!hdr_) return;  // alone: nobody on this host to wake
  uint32_t none = 0;
  hdr_->aborted.compare_exchange_strong(
      none, static_cast<uint32_t>(ranks_[static_cast<size_t>(rank_)]) + 1);
  hdr_->epoch.fetch_add(1);
  futex(&hdr_->epoch, FUTEX_WAKE, INT_MAX, nullptr);
}

Result<void> ShmReducer::barrier(Deadline deadline) {
  using Clock = std::chrono::steady_clock;
  RankWord* words = rank_words(hdr_);
  const uint64_t target = ++seq_;
  words[rank_].seq.store(target);
  hdr_->epoch.fetch_add(1);
  if (hdr_->waiters.load() > 0) futex(&hdr_->epoch, FUTEX_WAKE, INT_MAX, nullptr);

  const auto spin_until = Clock::now() + spin_time();
  for (;;) {
    const uint32_t epoch = hdr_->epoch.load();
    int late = -1;
    for (int r = 0; r < size_ && late < 0; ++r) {
      if (words[r].seq.load() < target) late = r;
    }
    if (late < 0) return {};
    if (const uint32_t by = hdr_->aborted.load(); by != 0) {
      // A peer that died is the reason to report, not the abort it caused.
      DP_TRY(check_peers());
      return make_error(Errc::aborted, "shared memory: rank " + std::to_string(by - 1) +
                                           " on this host gave up (its error says why)");
    }
    const auto now = Clock::now();
    if (now < spin_until) {
      cpu_relax();
      continue;
    }
    if (now >= deadline) {
      return make_error(Errc::timeout, "shared memory: timed out waiting for rank " +
                                           std::to_string(ranks_[static_cast<size_t>(late)]) +
                                           " on this host (DP_TIMEOUT_MS)");
    }
    const auto left = std::min<Clock::duration>(slice_time(), deadline - now);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const timespec ts{static_cast<time_t>(ns / 1'000'000'000),
                      static_cast<long>(ns % 1'000'000'000)};
    hdr_->waiters.fetch_add(1);
    const long rc = futex(&hdr_->epoch, FUTEX_WAIT, epoch, &ts);
    const int e = errno;
    hdr_->waiters.fetch_sub(1);
    if (rc != 0 && e == ETIMEDOUT) DP_TRY(check_peers());
  }
}

Result<void> ShmReducer::all_reduce(void* buf, size_t count, DType type, ReduceOp op,
                                    Deadline deadline) {
  if (failed_) {
    return make_error(Errc::aborted,
                      "shared memory: an earlier collective failed; the communicator is unusable");
  }
  // A failure leaves the slots and barrier counts out of step with the peers.
  auto r = reduce(buf, count, type, op, deadline);
  if (!r) failed_ = true;
  return r;
}

Result<void> ShmReducer::reduce(void* buf, size_t count, DType type, ReduceOp op,
                                Deadline deadline) {
  const size_t esz = dtype_size(type);
  const size_t per_chunk = chunk_ / esz;
  const size_t per_line = 64 / esz;  // ranks write whole cache lines of the output
  const SumFn sum = sum_function(type);
  char* data = static_cast<char*>(buf);
  if (size_ == 1) {
    // Alone on this host: the cross-host stage works on the buffer itself,
    // cut in the same chunks as the other hosts'.
    for (size_t off = 0; off < count; off += per_chunk) {
      const size_t n = std::min(per_chunk, count - off);
      DP_TRY(leader_stage_(data + off * esz, n, type));
      if (op == ReduceOp::avg) divide_in_place(data + off * esz, n, type, world_);
    }
    return {};
  }
  for (size_t off = 0; off < count; off += per_chunk) {
    const size_t n = std::min(per_chunk, count - off);
    const int set = static_cast<int>(round_++ & 1);
    std::memcpy(slot(set, rank_), data + off * esz, n * esz);
    DP_TRY(barrier(deadline));
    auto cut = [&](int r) {
      return r == size_ ? n
                        : std::min(n, n * static_cast<size_t>(r) / static_cast<size_t>(size_) /
                                          per_line * per_line);
    };
    const size_t lo = cut(rank_), hi = cut(rank_ + 1);
    if (hi > lo) {
      char* out = slot(set, size_) + lo * esz;
      sum(out, slot(set, 0) + lo * esz, slot(set, 1) + lo * esz, hi - lo);
      for (int j = 2; j < size_; ++j) sum(out, out, slot(set, j) + lo * esz, hi - lo);
      if (op == ReduceOp::avg && world_ == size_) divide_in_place(out, hi - lo, type, size_);
    }
    DP_TRY(barrier(deadline));
    if (world_ > size_) {  // other hosts: the leader joins them, then releases its peers
      if (leader_stage_) {
        char* out = slot(set, size_);
        DP_TRY(leader_stage_(out, n, type));
        if (op == ReduceOp::avg) divide_in_place(out, n, type, world_);
      }
      DP_TRY(barrier(deadline));
    }
    std::memcpy(data + off * esz, slot(set, size_), n * esz);
  }
  return {};
}

}  // namespace dp::detail
