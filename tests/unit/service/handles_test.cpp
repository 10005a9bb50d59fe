// The owners of descriptors and libevent objects: each closes or frees what
// it holds exactly once, and a move hands it over (the ASan build's leak
// check sees an event or base that is never freed).
#include "handles.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace dp::service {
namespace {

bool is_open(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

TEST(UniqueFd, ClosesWhatItHoldsOnce) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  {
    UniqueFd r(p[0]);
    EXPECT_TRUE(r);
    EXPECT_EQ(r.get(), p[0]);
  }
  EXPECT_FALSE(is_open(p[0]));
  UniqueFd w(p[1]);
  w.reset();
  EXPECT_FALSE(w);
  EXPECT_FALSE(is_open(p[1]));
}

TEST(UniqueFd, AMoveHandsItOverAndAnAssignmentClosesTheOldOne) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  UniqueFd a(p[0]);
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_EQ(b.get(), p[0]);
  UniqueFd c(p[1]);
  c = std::move(b);
  EXPECT_FALSE(is_open(p[1]));
  EXPECT_TRUE(is_open(p[0]));
  UniqueFd& same = c;
  c = std::move(same);
  EXPECT_TRUE(is_open(p[0]));
  const int raw = c.release();
  EXPECT_FALSE(c);
  EXPECT_TRUE(is_open(raw));
  close(raw);
}

int g_fired = 0;
void count(evutil_socket_t, short what, void*) {
  if (what & EV_TIMEOUT) ++g_fired;
}

TEST(EventPtr, WatchAddsAndTheOwnersFreeEventAndBase) {
  EventBasePtr base(event_base_new());
  ASSERT_TRUE(base);
  const timeval soon{0, 1'000};
  EventPtr timer = watch(base.get(), -1, 0, &count, nullptr, &soon);
  ASSERT_TRUE(timer);
  EventPtr idle = make_event(base.get(), -1, 0, &count, nullptr);
  ASSERT_TRUE(idle);
  EXPECT_FALSE(event_pending(idle.get(), EV_TIMEOUT, nullptr));
  g_fired = 0;
  ASSERT_GE(event_base_dispatch(base.get()), 0);  // returns once nothing is left to wait for
  EXPECT_EQ(g_fired, 1);
}

}  // namespace
}  // namespace dp::service
