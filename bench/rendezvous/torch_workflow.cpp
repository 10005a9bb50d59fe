#include "torch_workflow.hpp"

#include <cstdio>
#include <cstdlib>

#include "dp/torchstore/request.hpp"

namespace dp::bench {
namespace {

namespace ts = torchstore;

std::string encoded(ts::Dialect d, const ts::Request& r) {
  auto b = ts::encode_request(d, r);
  if (!b) {
    std::fprintf(stderr, "encode: %s\n", b.error().message.c_str());
    std::exit(1);
  }
  return *b;
}

ts::Request req(ts::Op op, std::string key = {}) {
  ts::Request r;
  r.op = op;
  r.key = std::move(key);
  return r;
}

ts::Request add_one(std::string key) {
  ts::Request a = req(ts::Op::add, std::move(key));
  a.delta = 1;
  return a;
}

ts::Request wait_for(std::string key) {
  ts::Request w = req(ts::Op::wait);
  w.keys = {std::move(key)};
  return w;
}

}  // namespace

const std::string kNcclId(128, 'I');

int first_step(ts::Dialect d) { return d == ts::Dialect::v2 ? 0 : 1; }

namespace {

std::string encode_step(ts::Dialect d, int rank, int step) {
  switch (step) {
    case 0: {
      ts::Request v = req(ts::Op::validate);
      v.number = ts::kValidationMagic;
      ts::Request p = req(ts::Op::ping);
      p.number = static_cast<uint32_t>(rank + 1);
      return encoded(d, v) + encoded(d, p);
    }
    case 1: return encoded(d, add_one("init/"));
    case 2: {
      std::string b;
      if (rank == 0) {
        ts::Request id = req(ts::Op::set, "nccl_id");
        id.value = kNcclId;
        b += encoded(d, id);
      }
      return b + encoded(d, wait_for("nccl_id"));
    }
    case 3: return encoded(d, req(ts::Op::get, "nccl_id"));
    case 4: return encoded(d, add_one("barrier"));
    default: return encoded(d, wait_for("barrier_done"));
  }
}

}  // namespace

// Encoding is the simulated client's work, not the server's: every step
// but PING (whose nonce is the rank's) is encoded once per dialect, with
// rank 0's ID exchange apart.
const std::string& workflow_step(ts::Dialect d, int rank, int step) {
  if (step <= 0 || step > kLastStep) {
    static std::string per_rank;
    per_rank = encode_step(d, rank, step);
    return per_rank;
  }
  static std::string cache[2][2][kLastStep + 1];
  std::string& bytes = cache[d == ts::Dialect::v2][rank == 0][step];
  if (bytes.empty()) bytes = encode_step(d, rank == 0 ? 0 : 1, step);
  return bytes;
}

size_t answer_bytes(int step) {
  switch (step) {
    case 0: return 4;        // PING's echo
    case 1: return 8;        // ADD init/
    case 2: return 1;        // WAIT nccl_id
    case 3: return 8 + 128;  // GET nccl_id
    case 4: return 8;        // ADD barrier
    case 5: return 1;        // WAIT barrier_done
  }
  return 0;
}

std::string barrier_done(ts::Dialect d) {
  ts::Request done = req(ts::Op::set, "barrier_done");
  done.value = "1";
  return encoded(d, done);
}

}  // namespace dp::bench
