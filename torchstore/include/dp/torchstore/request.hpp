// One request of PyTorch's store protocol, typed, and its client-side bytes.
// Strings and blobs go on the wire as a uint64 length then the bytes, numbers
// as fixed-width integers, all in host byte order (little-endian on every
// platform slurm-dp builds for), exactly as TCPStore's SendBuffer writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dp/result.hpp"
#include "dp/torchstore/opcodes.hpp"

namespace dp::torchstore {

struct Request {
  Op op = Op::get_num_keys;
  std::string key;                  // SET, COMPARE_SET, GET, ADD, WATCH_KEY, DELETE_KEY,
                                    // APPEND, QUEUE_PUSH, QUEUE_POP, QUEUE_LEN
  std::string value;                // SET, APPEND, QUEUE_PUSH; COMPARE_SET's desired value
  std::string expected;             // COMPARE_SET's expected value ("" also means: create)
  int64_t delta = 0;                // ADD
  uint32_t number = 0;              // VALIDATE's magic, PING's nonce (the client's pid)
  std::vector<std::string> keys;    // CHECK, WAIT, MULTI_GET, MULTI_SET
  std::vector<std::string> values;  // MULTI_SET, one per key

  bool operator==(const Request&) const = default;
};

// The bytes a PyTorch client of that dialect sends for the request (a test's
// and a simulated client's side); an error for an operation the dialect lacks
// or a MULTI_SET whose keys and values differ in number.
Result<std::string> encode_request(Dialect d, const Request& r);

// TCPStore's worker handshake: every client built with a world size adds 1
// to the raw key "init/" before anything else (user keys always carry a "/"
// prefix, so no program's own ADD looks like it). Its count tells that a
// program's store clients are all up, whatever the program's own keys are.
bool announces_worker(const Request& r);

}  // namespace dp::torchstore
