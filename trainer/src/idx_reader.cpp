#include <zlib.h>

#include <cstdio>
#include <memory>

#include "dataset.hpp"

namespace dpt {
namespace {

// IDX magic: two zero bytes, the element type (0x08 = unsigned byte), the rank.
constexpr unsigned char kUbyte = 0x08;
constexpr size_t kMaxBytes = size_t{1} << 31;  // far above any MNIST-like file

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

dp::Error bad(const std::string& path, const std::string& what) {
  return dp::make_error(
      dp::Errc::invalid_argument,
      "fashion-mnist: " + path + ": " + what +
          "; reinstall dataset-fashion-mnist or point --data-dir at intact IDX files");
}

// Reads the whole (decompressed) file, capped so a bogus file cannot exhaust memory.
dp::Result<std::vector<uint8_t>> slurp(const std::string& path) {
  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  if (!f)
    return dp::make_error(dp::Errc::not_found,
                          "fashion-mnist: cannot open " + path +
                              " (install dataset-fashion-mnist or pass --data-dir DIR)");
  std::vector<uint8_t> data;
  uint8_t chunk[1 << 16];
  for (;;) {
    const int n = gzread(f.get(), chunk, sizeof chunk);
    if (n < 0) {
      int err = 0;
      const char* msg = gzerror(f.get(), &err);
      return bad(path, std::string("corrupt gzip stream (") + (msg ? msg : "?") + ")");
    }
    if (n == 0) break;
    if (data.size() + static_cast<size_t>(n) > kMaxBytes) return bad(path, "larger than 2 GiB");
    data.insert(data.end(), chunk, chunk + n);
  }
  // gzread stops silently at a truncated gzip member; gzerror tells.
  int err = 0;
  gzerror(f.get(), &err);
  if (err != Z_OK && err != Z_STREAM_END) return bad(path, "truncated or corrupt gzip stream");
  return data;
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Checks the header of an IDX file of unsigned bytes with `rank` dimensions
// and that the payload has exactly the size the header announces.
dp::Result<std::vector<uint32_t>> check_header(const std::string& path,
                                               const std::vector<uint8_t>& d, int rank) {
  if (d.size() < 4)
    return bad(path, "too short for an IDX header (" + std::to_string(d.size()) + " bytes)");
  if (d[0] != 0 || d[1] != 0 || d[2] != kUbyte || d[3] != rank) {
    char magic[16];
    std::snprintf(magic, sizeof magic, "%02x%02x%02x%02x", d[0], d[1], d[2], d[3]);
    return bad(path, std::string("not an IDX file of unsigned bytes with ") + std::to_string(rank) +
                         " dimensions (magic 0x" + magic + ", expected 0x000008" +
                         (rank == 1 ? "01" : "03") + ")");
  }
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (d.size() < header) return bad(path, "truncated IDX header");
  std::vector<uint32_t> dims;
  size_t payload = 1;
  for (int i = 0; i < rank; ++i) {
    dims.push_back(be32(d.data() + 4 + 4 * i));
    if (dims.back() == 0) return bad(path, "dimension " + std::to_string(i) + " is zero");
    payload *= dims.back();
    if (payload > kMaxBytes) return bad(path, "header announces more than 2 GiB");
  }
  if (d.size() - header != payload)
    return bad(path, std::string(d.size() - header < payload ? "truncated" : "trailing bytes") +
                         ": header announces " + std::to_string(payload) +
                         " data bytes, file has " + std::to_string(d.size() - header));
  return dims;
}

}  // namespace

dp::Result<std::vector<uint8_t>> read_idx_images(const std::string& path, size_t& count, int& rows,
                                                 int& cols) {
  auto data = slurp(path);
  if (!data) return data.error();
  auto dims = check_header(path, *data, 3);
  if (!dims) return dims.error();
  count = (*dims)[0];
  rows = static_cast<int>((*dims)[1]);
  cols = static_cast<int>((*dims)[2]);
  if (rows > 4096 || cols > 4096) return bad(path, "images larger than 4096x4096");
  data->erase(data->begin(), data->begin() + 16);
  return data;
}

dp::Result<std::vector<uint8_t>> read_idx_labels(const std::string& path, size_t& count) {
  auto data = slurp(path);
  if (!data) return data.error();
  auto dims = check_header(path, *data, 1);
  if (!dims) return dims.error();
  count = (*dims)[0];
  data->erase(data->begin(), data->begin() + 8);
  return data;
}

}  // namespace dpt
