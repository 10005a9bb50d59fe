// PyTorch's TCPStore wire protocol: its two opcode dialects and the one-byte
// answers, as PyTorch's own sources and recorded clients have them
// (torchstore/README.md says which version each fact was checked against).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dp::torchstore {

// What a connection speaks, told from its first bytes (dialect.hpp).
enum class Dialect : uint8_t {
  legacy,  // PyTorch 1.13 and 2.0: SET is 0, WATCH_KEY 7, DELETE_KEY 8, nothing more
  v2,      // PyTorch 2.2 and later: VALIDATE is 0 and first on every connection
};

// Every operation of either dialect, by meaning; the byte differs by dialect.
enum class Op : uint8_t {
  validate,  // v2: first request of a connection, uint32 magic
  set,
  compare_set,
  get,
  add,
  check,
  wait,
  get_num_keys,
  watch_key,  // legacy only, sent on the client's second ("callback") connection
  delete_key,
  append,       // v2
  multi_get,    // v2
  multi_set,    // v2
  cancel_wait,  // v2
  ping,         // v2, from PyTorch 2.5
  queue_push,   // v2, from PyTorch 2.8
  queue_pop,    // v2, from PyTorch 2.8
  queue_len,    // v2, from PyTorch 2.8
};

// The validation magic: a v2 connection starts with 00 ce f7 85 3c.
inline constexpr uint32_t kValidationMagic = 0x3C85F7CE;

// CHECK's answer byte.
enum class CheckAnswer : uint8_t { ready = 0, not_ready = 1 };
// WAIT's (and CANCEL_WAIT's) answer byte.
enum class WaitAnswer : uint8_t { stop_waiting = 0, wait_canceled = 1 };
// The legacy server's messages on a callback connection after WATCH_KEY.
enum class WatchEvent : uint8_t {
  key_updated = 0,
  key_created = 1,
  key_deleted = 2,
  callback_registered = 3,
};

// The operation a byte names in a dialect; nullopt for a byte it does not use.
std::optional<Op> op_from_byte(Dialect d, uint8_t byte);
// The byte of an operation in a dialect; nullopt where the dialect lacks it.
std::optional<uint8_t> op_byte(Dialect d, Op op);
// PyTorch's own name of the operation ("SET", "MULTI_GET", ...).
const char* op_name(Op op);
// An opcode as a log line shows it: "SET (0x00)", or for a byte the dialect
// does not serve, what it is where known ("LIST_KEYS (0x11), from a PyTorch
// newer than 2.8, not served") or "unknown opcode 0xee".
std::string describe_opcode(Dialect d, uint8_t byte);
const char* dialect_name(Dialect d);

}  // namespace dp::torchstore
