#include "report_file.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dp/shown_value.hpp"
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"
#include "dp/user_text.hpp"

namespace dp::spank {
namespace {

// A path as messages show it: a site's pattern may expand to anything.
std::string shown(const std::string& path) { return shown_value(path, 256); }

Result<void> refused(const std::string& path, const std::string& why) {
  return make_error(Errc::invalid_argument,
                    "the step report " + shown(path) + " " + why +
                        ": refused, nothing written; remove it or write reports to a folder of "
                        "your own (--dp-report=PATH, or the site's report= with %u in it)");
}

Result<void> write_all(int fd, const std::string& path, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return make_error(Errc::unavailable,
                        "cannot write the step report " + shown(path) + ": " + dp::errno_text());
    off += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

std::string current_user_name() {
  passwd pw{};
  passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_name)
    return found->pw_name;
  return std::to_string(getuid());
}

std::string expand_report_path(const std::string& pattern, const std::string& job,
                               const std::string& step, const std::string& user) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[i + 1];
      if (c == 'j' || c == 's' || c == 'u' || c == '%') {
        out += c == 'j' ? job : c == 's' ? step : c == 'u' ? user : "%";
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

Result<void> write_report_file(const std::string& path, const std::string& text) {
  // No O_TRUNC: a file that is not ours must not lose its contents either.
  const UniqueFd fd(
      open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd && errno == ELOOP) return refused(path, "is a symbolic link");
  // A sticky folder (fs.protected_regular) refuses to open another user's
  // file at all: say whose it is rather than "permission denied".
  if (struct stat other{}; !fd && (errno == EACCES || errno == EPERM) &&
                           lstat(path.c_str(), &other) == 0 && other.st_uid != geteuid())
    return refused(path, "belongs to " + user_text(other.st_uid) + ", not to you");
  if (!fd)
    return make_error(Errc::unavailable,
                      "cannot write the step report " + shown(path) + ": " + dp::errno_text());
  struct stat st {};
  if (fstat(fd.get(), &st) != 0)
    return make_error(Errc::unavailable,
                      "cannot check the step report " + shown(path) + ": " + dp::errno_text());
  if (!S_ISREG(st.st_mode)) return refused(path, "is not a regular file");
  if (st.st_uid != geteuid())
    return refused(path, "belongs to " + user_text(st.st_uid) + ", not to you");
  if (st.st_nlink != 1)
    return refused(path, "has " + std::to_string(st.st_nlink) + " names (a hard link)");
  if (ftruncate(fd.get(), 0) != 0)
    return make_error(Errc::unavailable,
                      "cannot write the step report " + shown(path) + ": " + dp::errno_text());
  return write_all(fd.get(), path, text);
}

}  // namespace dp::spank
