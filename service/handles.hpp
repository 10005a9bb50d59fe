// Owners of what a per-step service opens: a descriptor, a libevent event,
// the event base. Each frees its object once, when it goes, so nothing is
// closed or freed by hand. Members are destroyed in reverse order: declare
// the event base before anything holding its events, and a descriptor
// before its events (an event must go before its descriptor is reused).
#pragma once

#include <event2/event.h>

#include "dp/unique_fd.hpp"

#include <memory>
#include <utility>

namespace dp::service {

// The house's one descriptor owner (dp/unique_fd.hpp), by its old name here.
using UniqueFd = dp::UniqueFd;

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
