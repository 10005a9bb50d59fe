#include "checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"

namespace dpt {
namespace {

constexpr char kMagic[8] = {'D', 'P', 'T', 'C', 'K', 'P', 'T', '1'};

class Writer {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  void u64(uint64_t v) { bytes(&v, sizeof v); }
  void floats(const std::vector<float>& v) {
    u64(v.size());
    bytes(v.data(), v.size() * sizeof(float));
  }
  std::vector<uint8_t>& data() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool bytes(void* out, size_t n) {
    if (n > n_ - pos_) return false;
    std::memcpy(out, p_ + pos_, n);
    pos_ += n;
    return true;
  }
  bool u64(uint64_t& v) { return bytes(&v, sizeof v); }
  bool floats(std::vector<float>& v) {
    uint64_t n = 0;
    if (!u64(n) || n > (n_ - pos_) / sizeof(float)) return false;
    v.resize(n);
    return bytes(v.data(), n * sizeof(float));
  }
  bool done() const { return pos_ == n_; }

 private:
  const uint8_t* p_;
  size_t n_, pos_ = 0;
};

dp::Error io_error(const std::string& what, const std::string& path) {
  return dp::make_error(dp::Errc::internal, "checkpoint: " + what + " " + path + ": " +
                                                dp::errno_text() +
                                                "; check --checkpoint points at a writable folder");
}

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A fresh file, never one reached through a symlink someone planted in a
// shared folder (O_EXCL fails on any existing name, links included). A name
// left by a crashed writer with our pid is removed (unlink removes a link,
// not its target) and tried once more.
dp::UniqueFd create_new(const std::string& tmp) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  dp::UniqueFd fd(::open(tmp.c_str(), flags, 0644));
  if (!fd && errno == EEXIST && ::unlink(tmp.c_str()) == 0)
    fd.reset(::open(tmp.c_str(), flags, 0644));
  return fd;
}

}  // namespace

dp::Result<void> write_checkpoint(const std::string& path, const CheckpointData& data) {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.u64(data.fingerprint.size());
  w.bytes(data.fingerprint.data(), data.fingerprint.size());
  w.u64(static_cast<uint64_t>(data.position.global_step));
  w.u64(static_cast<uint64_t>(data.position.epoch));
  w.u64(static_cast<uint64_t>(data.position.batch_in_epoch));
  w.floats(data.params);
  w.u64(data.optimizer_state.size());
  for (const auto& s : data.optimizer_state) w.floats(s);
  const uint32_t crc =
      static_cast<uint32_t>(crc32(0L, w.data().data(), static_cast<uInt>(w.data().size())));
  w.bytes(&crc, sizeof crc);

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  dp::UniqueFd fd = create_new(tmp);
  if (!fd) return io_error("cannot create", tmp);
  const bool ok = write_all(fd.get(), w.data().data(), w.data().size()) && ::fsync(fd.get()) == 0;
  const int saved = errno;
  fd.reset();
  if (!ok) {
    ::unlink(tmp.c_str());
    errno = saved;
    return io_error("cannot write", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    errno = e;
    return io_error("cannot rename onto", path);
  }
  // The rename is durable only once the folder is synced.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (const dp::UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); dfd)
    ::fsync(dfd.get());
  return {};
}

dp::Result<CheckpointData> read_checkpoint(const std::string& path) {
  const dp::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return dp::make_error(dp::Errc::not_found, "checkpoint: no file " + path);
    return io_error("cannot open", path);
  }
  std::vector<uint8_t> buf;
  uint8_t chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot read", path);
    if (n == 0) break;
    buf.insert(buf.end(), chunk, chunk + n);
  }
  auto corrupt = [&](const std::string& why) {
    return dp::make_error(dp::Errc::invalid_argument,
                          "checkpoint: " + path + ": " + why +
                              "; delete it to start over or pass the right --checkpoint");
  };
  if (buf.size() < sizeof kMagic + 4 || std::memcmp(buf.data(), kMagic, sizeof kMagic) != 0)
    return corrupt("not a dp-trainer checkpoint");
  uint32_t stored = 0;
  std::memcpy(&stored, buf.data() + buf.size() - 4, 4);
  const size_t body = buf.size() - 4;
  if (static_cast<uint32_t>(crc32(0L, buf.data(), static_cast<uInt>(body))) != stored)
    return corrupt("checksum mismatch (truncated or damaged)");
  Reader r(buf.data() + sizeof kMagic, body - sizeof kMagic);
  CheckpointData d;
  uint64_t len = 0, a = 0, b = 0, c = 0, nstate = 0;
  if (!r.u64(len) || len > 4096) return corrupt("bad header");
  d.fingerprint.resize(len);
  if (!r.bytes(d.fingerprint.data(), len) || !r.u64(a) || !r.u64(b) || !r.u64(c) ||
      !r.floats(d.params) || !r.u64(nstate) || nstate > 8)
    return corrupt("bad header");
  d.position = {static_cast<int64_t>(a), static_cast<int64_t>(b), static_cast<int64_t>(c)};
  d.optimizer_state.resize(nstate);
  for (auto& s : d.optimizer_state)
    if (!r.floats(s)) return corrupt("truncated optimizer state");
  if (!r.done()) return corrupt("trailing bytes");
  return d;
}

}  // namespace dpt
