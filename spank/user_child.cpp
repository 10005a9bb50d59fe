#include "user_child.hpp"

#include <grp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dp::spank {

using Clock = std::chrono::steady_clock;

bool become_user(const UserIds& ids) {
  if (setgroups(1, &ids.gid) != 0 || setgid(ids.gid) != 0 || setuid(ids.uid) != 0) return false;
  uid_t r = 0, e = 0, s = 0;
  gid_t rg = 0, eg = 0, sg = 0;
  if (getresuid(&r, &e, &s) != 0 || r != ids.uid || e != ids.uid || s != ids.uid) return false;
  if (getresgid(&rg, &eg, &sg) != 0 || rg != ids.gid || eg != ids.gid || sg != ids.gid)
    return false;
  if (ids.uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) return false;
  return true;
}

Result<std::string> read_answer(int fd, Clock::time_point deadline,
                                std::chrono::milliseconds allowed, const std::string& who) {
  std::string got;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0)
      return make_error(Errc::timeout,
                        who + " gave no answer within " + std::to_string(allowed.count()) + " ms");
    pollfd pf{fd, POLLIN, 0};
    const int pr = poll(&pf, 1, static_cast<int>(std::min<long long>(left, 1'000'000)));
    if (pr <= 0) continue;  // EINTR or the deadline: checked above
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return got;  // EOF: the whole answer is in
    got.append(buf, static_cast<size_t>(n));
    if (got.size() > kMaxChildAnswer)
      return make_error(Errc::protocol,
                        who + " answered more than " + std::to_string(kMaxChildAnswer) + " bytes");
  }
}

}  // namespace dp::spank
