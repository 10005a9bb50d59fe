// Owners of what a per-step service opens: a descriptor, a libevent event,
// the event base. Each frees its object once, when it goes, so nothing is
// closed or freed by hand. Members are destroyed in reverse order: declare
// the event base before anything holding its events, and a descriptor
// before its events (an event must go before its descriptor is reused).
#pragma once

#include <event2/event.h>

#include <memory>
#include <utility>

namespace dp::service {

class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept;  // closes the one held, if any

 private:
  int fd_ = -1;
};

struct EventFree {
  void operator()(event* e) const noexcept { event_free(e); }
};
struct EventBaseFree {
  void operator()(event_base* b) const noexcept { event_base_free(b); }
};
using EventPtr = std::unique_ptr<event, EventFree>;
using EventBasePtr = std::unique_ptr<event_base, EventBaseFree>;

// A new event of `base`, or null when libevent cannot make one.
EventPtr make_event(event_base* base, evutil_socket_t fd, short what, event_callback_fn cb,
                    void* arg);
// The same, added at once (with `timeout`, or none); null when either fails.
EventPtr watch(event_base* base, evutil_socket_t fd, short what, event_callback_fn cb, void* arg,
               const timeval* timeout = nullptr);

}  // namespace dp::service
