/* LD_PRELOAD shim for e2e.<mode>.runtime.shm_failures: makes the shared
 * memory start-up of one rank (RANK == DP_SHIM_RANK) fail or die at a chosen
 * call, as a full or broken node would. DP_SHIM:
 *   fail-memfd          memfd_create fails with ENOMEM (no shared memory)
 *   kill-after-memfd    SIGKILL right after the segment was created
 *   kill-after-reserve  SIGKILL right after its memory was reserved
 *   kill-before-open    SIGKILL just before a peer opens the creator's segment
 *   kill-after-open     SIGKILL just after it did */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int chosen(const char* what) {
  const char* mode = getenv("DP_SHIM");
  const char* rank = getenv("RANK");
  const char* target = getenv("DP_SHIM_RANK");
  if (!mode || strcmp(mode, what) != 0) return 0;
  return !target || (rank && strcmp(rank, target) == 0);
}

int memfd_create(const char* name, unsigned int flags) {
  if (chosen("fail-memfd")) {
    errno = ENOMEM;
    return -1;
  }
  int (*real)(const char*, unsigned int) =
      (int (*)(const char*, unsigned int))dlsym(RTLD_NEXT, "memfd_create");
  int fd = real(name, flags);
  if (chosen("kill-after-memfd")) raise(SIGKILL);
  return fd;
}

int posix_fallocate(int fd, off_t offset, off_t len) {
  int (*real)(int, off_t, off_t) = (int (*)(int, off_t, off_t))dlsym(RTLD_NEXT, "posix_fallocate");
  int r = real(fd, offset, len);
  if (chosen("kill-after-reserve")) raise(SIGKILL);
  return r;
}

static int is_peer_segment(const char* path) {
  return strncmp(path, "/proc/", 6) == 0 && strstr(path, "/fd/");
}

static int shim_open(const char* sym, const char* path, int flags, mode_t mode) {
  int (*real)(const char*, int, ...) = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, sym);
  int peer = is_peer_segment(path);
  if (peer && chosen("kill-before-open")) raise(SIGKILL);
  int fd = real(path, flags, mode);
  if (peer && chosen("kill-after-open")) raise(SIGKILL);
  return fd;
}

/* open and open64 (glibc may call either), each reading the optional mode. */
#define SHIM_OPEN(name)                         \
  int name(const char* path, int flags, ...) {  \
    mode_t mode = 0;                            \
    if (flags & O_CREAT) {                      \
      va_list ap;                               \
      va_start(ap, flags);                      \
      mode = va_arg(ap, mode_t);                \
      va_end(ap);                               \
    }                                           \
    return shim_open(#name, path, flags, mode); \
  }
SHIM_OPEN(open)
SHIM_OPEN(open64)
