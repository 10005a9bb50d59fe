// All-reduce between ranks that share one host, through a shared-memory
// segment instead of loopback TCP: each rank copies a chunk of its buffer into
// its own slot, reduces 1/N of the chunk over every slot into a shared output,
// and copies the whole output back. Over loopback TCP the kernel copies every
// byte into and out of socket buffers, on the very cores the ranks compute
// on; here a rank's bytes are copied in once, read once by the rank that sums
// them, and the sum is copied out. NCCL and MPI move intra-node traffic the
// same way.
//
// Two sets of slots alternate, so a chunk costs two barriers, not three; the
// chunk counter runs across calls, so every rank must issue the same calls in
// the same order (the OpQueue guarantees it). Every wait is bounded: it fails
// on abort(), on a peer process that exited, or at the deadline.
//
// With ranks on several hosts, each host's ranks form one reducer and a
// cross-host stage joins them: after the local reduction the host's leader
// (local rank 0) sums the chunk with the other hosts' leaders over TCP, and a
// third barrier releases its peers. Only one process per host then talks TCP,
// with 1/N of the traffic a ring through every rank would carry.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dp/communicator.hpp"
#include "dp/unique_fd.hpp"

namespace dp::detail {

class ShmReducer {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // Local rank 0 creates the segment: anonymous memory (memfd) with nothing
  // in /dev/shm, reserved up front so a lack of memory is an error here, not
  // SIGBUS later. The others open it through share_path() (the creator's
  // descriptor under /proc) once it has. Each writes its pid into the segment.
  // ranks: the job rank of each local rank, for messages. chunk: bytes per
  // slot, the same on every host (chunk_bytes_for the largest host).
  static Result<std::shared_ptr<ShmReducer>> create(std::vector<int> ranks, size_t chunk);
  static Result<std::shared_ptr<ShmReducer>> open(const std::string& path, int local_rank,
                                                  std::vector<int> ranks, size_t chunk);
  // Where the other local ranks open the creator's segment ("" on the others).
  std::string share_path() const;
  // Once every local rank has opened it (or failed): the creator closes the
  // descriptor it shared.
  void stop_sharing();
  // The only rank on its host (with other hosts): no segment, only the
  // cross-host stage, on the caller's buffer in the common chunks.
  static std::shared_ptr<ShmReducer> alone(int job_rank, size_t chunk);
  ~ShmReducer();
  ShmReducer(const ShmReducer&) = delete;
  ShmReducer& operator=(const ShmReducer&) = delete;

  // Once every rank has opened the segment: watch the peers' processes.
  void attach_peers();

  // Sums `count` elements at `data` with the other hosts' leaders, in place.
  using CrossHost = std::function<Result<void>(void* data, size_t count, DType type)>;
  // Joins hosts: `world` ranks in all (avg divides by it); `leader_stage` is
  // set on the leader only. Call before the first all_reduce; a reducer of
  // one rank needs it.
  void set_cross_host(int world, CrossHost leader_stage);

  Result<void> all_reduce(void* buf, size_t count, DType type, ReduceOp op, Deadline deadline);
  // Wakes every rank's pending wait; this and later calls fail. Thread-safe.
  void abort();

  int size() const { return size_; }
  size_t bytes() const { return bytes_; }

  // Per-rank slot size for `size` ranks: large enough to amortise the
  // barriers, small enough that the segment stays ~16 MiB for any size.
  static size_t chunk_bytes_for(int size);

  struct Header;  // the segment's control block (shm_reducer.cpp)

 private:
  ShmReducer(int rank, std::vector<int> ranks, size_t chunk, void* base, size_t bytes);
  static Result<std::shared_ptr<ShmReducer>> map(UniqueFd fd, int rank, std::vector<int> ranks,
                                                 size_t chunk, bool fresh);
  char* slot(int set, int index) const;
  Result<void> reduce(void* buf, size_t count, DType type, ReduceOp op, Deadline deadline);
  Result<void> barrier(Deadline deadline);
  Result<void> check_peers();

  int rank_;                // local
  int size_;                // ranks on this host
  std::vector<int> ranks_;  // job rank of each local rank
  size_t chunk_;
  void* base_;
  size_t bytes_;
  Header* hdr_;
  char* data_;
  uint64_t seq_ = 0;              // barriers passed
  uint64_t round_ = 0;            // chunks reduced: picks the slot set
  std::vector<UniqueFd> pidfds_;  // per rank, none for self
  UniqueFd share_fd_;             // the creator's memfd until every peer opened it
  bool failed_ = false;
  int world_;  // more than size_ once set_cross_host joined other hosts
  CrossHost leader_stage_;
};

}  // namespace dp::detail
