#include "handles.hpp"

#include <unistd.h>

namespace dp::service {

EventPtr make_event(event_base* base, evutil_socket_t fd, short what, event_callback_fn cb,
                    void* arg) {
  return EventPtr(event_new(base, fd, what, cb, arg));
}

EventPtr watch(event_base* base, evutil_socket_t fd, short what, event_callback_fn cb, void* arg,
               const timeval* timeout) {
  EventPtr e = make_event(base, fd, what, cb, arg);
  if (e && event_add(e.get(), timeout) != 0) e.reset();
  return e;
}

}  // namespace dp::service
