#include "listener.hpp"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>

namespace dp::service {

Result<void> Listener::start(event_base* base, UniqueFd fd, int batch, std::string who,
                             Accept accept) {
  fd_ = std::move(fd);
  spare_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  batch_ = batch;
  who_ = std::move(who);
  accept_ = std::move(accept);
  ready_ = watch(base, fd_.get(), EV_READ | EV_PERSIST, &Listener::on_ready, this);
  if (!ready_) return make_error(Errc::internal, who_ + ": cannot watch a listening socket");
  return {};
}

void Listener::on_ready(evutil_socket_t, short, void* arg) {
  static_cast<Listener*>(arg)->accept_some();
}

void Listener::accept_some() {
  for (int i = 0; i < batch_; ++i) {
    UniqueFd c(accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (c) {
      accept_(std::move(c));
      continue;
    }
    if (errno != EMFILE && errno != ENFILE) return;  // nothing waiting, or a peer gone already
    if (spare_) {
      spare_.reset();
      UniqueFd(accept(fd_.get(), nullptr, nullptr)).reset();
      spare_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    }
    std::fprintf(stderr, "%s: out of file descriptors; refused a connection\n", who_.c_str());
    return;
  }
}

}  // namespace dp::service
