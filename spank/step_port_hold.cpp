#include "step_port_hold.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "dp/sys_error.hpp"
#include "socket_tables.hpp"

namespace dp::spank {
namespace {

void signal_event(int fd) noexcept {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(fd, &one, sizeof one);
}

// Waits for the eventfd at most timeout_ms (-1: for ever).
bool await_event(int fd, int timeout_ms) noexcept {
  pollfd p{fd, POLLIN, 0};
  int r;
  while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  return r > 0;
}

}  // namespace

Result<void> StepPortHold::keep(std::vector<HeldPort> ports) {
  stop();
  wake_.reset(eventfd(0, EFD_CLOEXEC));
  done_.reset(eventfd(0, EFD_CLOEXEC));
  if (!wake_ || !done_)
    return make_error(Errc::internal, std::string("eventfd: ") + dp::errno_text());
  int fence[2];
  if (pipe2(fence, O_CLOEXEC) != 0)
    return make_error(Errc::internal, std::string("pipe: ") + dp::errno_text());
  fence_read_.reset(fence[0]);
  fence_write_.reset(fence[1]);
  held_ = std::move(ports);
  let_go_ = false;
  if (const int e = pthread_create(&closer_, nullptr, closer_main, this); e != 0) {
    held_.clear();
    return make_error(Errc::internal, std::string("cannot start a thread: ") + dp::errno_text(e));
  }
  owner_ = getpid();
  return {};
}

void* StepPortHold::closer_main(void* self) noexcept {
  auto* h = static_cast<StepPortHold*>(self);
  await_event(h->wake_.get(), -1);  // only this plugin signals it
  h->close_copy();                  // in slurmstepd's own descriptor table
  signal_event(h->done_.get());
  return nullptr;
}

void StepPortHold::let_go_in_stepd() noexcept {
  if (owner_ == 0 || let_go_.exchange(true)) return;
  signal_event(wake_.get());
  // The closer only closes a descriptor: a second is plenty, and the tasks
  // must not wait on it longer whatever happens.
  await_event(done_.get(), 1'000);
}

int StepPortHold::fd(int port) const noexcept {
  for (const HeldPort& p : held_)
    if (p.port == port) return p.socket.get();
  return -1;
}

void StepPortHold::close_copy() noexcept {
  for (HeldPort& p : held_) p.socket.reset();
  fence_write_.reset();
  fence_read_.reset();
}

void StepPortHold::drop_task_copy() noexcept {
  close_copy();
  wake_.reset();
  done_.reset();
}

bool StepPortHold::await_other_copies(int timeout_ms) noexcept {
  fence_write_.reset();
  // Nothing is ever written: the pipe's end (POLLHUP) is the only event.
  const bool ended = !fence_read_ || await_event(fence_read_.get(), timeout_ms);
  fence_read_.reset();
  return ended;
}

void StepPortHold::stop() noexcept {
  // A task's process has no closer (threads do not survive fork).
  if (owner_ == 0 || owner_ != getpid()) return;
  let_go_in_stepd();
  pthread_join(closer_, nullptr);
  owner_ = 0;
  wake_.reset();
  done_.reset();
}

Result<void> share_hold_with_user(int fd, uid_t uid) {
  const int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
      fchown(fd, uid, static_cast<gid_t>(-1)) != 0)
    return make_error(
        Errc::internal,
        std::string("cannot share a held port with the job's user: ") + dp::errno_text());
  return {};
}

Result<void> check_step_port_before_exec(int held, int port) {
  if (held < 0) return {};
  const PortHolders h = port_holders_here(port, port);
  if (h.by_uid.empty()) return {};
  return make_error(Errc::unavailable,
                    "MASTER_PORT " + std::to_string(port) + " is bound by another process too (" +
                        port_holder_text(port) +
                        "), which shared it with slurm-dp's hold (the port's last connections were "
                        "still in TIME_WAIT, so the hold had to allow that); start the step "
                        "again, or hand the port to rank 0 with --dp-master-socket=pass");
}

}  // namespace dp::spank
