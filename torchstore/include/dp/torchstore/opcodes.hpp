// PyTorch's TCPStore wire protocol: its two opcode dialects and the one-byte
// answers, as PyTorch's own sources and recorded clients have them
// (torchstore/README.md says which version each fact was checked against).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>

namespace dp::torchstore {

// What a connection speaks, told from its first bytes (dialect.hpp).
enum class Dialect : uint8_t {
  legacy,  // PyTorch 1.13 and 2.0: SET is 0, WATCH_KEY 7, DELETE_KEY 8, nothing more
  v2,      // PyTorch 2.2 and later: VALIDATE is 0 and first on every connection
};

// Every operation of either dialect, by meaning; the byte differs by dialect.
// Adding one: its row in the table below (kOps: bytes, body, route,
// answer, resend), its codec where the compiler asks (every switch over Op
// is exhaustive, -Wswitch-enum, no default), its tests.
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
  queue_len,    // v2, from PyTorch 2.8; the last: kOpCount counts to it
};
inline constexpr size_t kOpCount = static_cast<size_t>(Op::queue_len) + 1;

// A request's fields after its opcode, in wire order (request.hpp names them).
enum class Body : uint8_t {
  none,         // GETNUMKEYS, CANCEL_WAIT
  number,       // a uint32: VALIDATE's magic, PING's nonce
  key,          // one key
  key_value,    // a key, then a value
  compare_set,  // a key, the expected value, the desired value
  add,          // a key, then an int64 delta
  key_list,     // a uint64 count, then that many keys
  pair_list,    // an int64 count, then that many key, value pairs
};

// Where the node agent serves an operation (--dp-store=step).
enum class Route : uint8_t {
  local,  // answered, or refused, by the agent itself
  read,   // through the daemon; identical ones of a node ride one request
  write,  // through the daemon, one by one, in arrival order
};

// What PyTorch's server sends back (reply.hpp frames each).
enum class Answer : uint8_t {
  none,       // SET, APPEND, MULTI_SET, QUEUE_PUSH, VALIDATE (and WAIT until its keys exist)
  value,      // GET, COMPARE_SET: one blob
  values,     // MULTI_GET: a blob per key
  int64,      // ADD, GETNUMKEYS, DELETE_KEY, QUEUE_LEN
  check,      // CHECK: READY or NOT_READY
  wait,       // WAIT: STOP_WAITING; CANCEL_WAIT: WAIT_CANCELED
  ping,       // PING: the nonce echoed
  queue_pop,  // QUEUE_POP: the length before, then the value when there was one
  watch,      // WATCH_KEY: registered, then an event per change
};

// One operation, all that routes and frames it.
struct OpInfo {
  Op op;
  const char* name;  // PyTorch's own name ("SET", "MULTI_GET", ...)
  int16_t legacy;    // its byte in 1.13/2.0's enum QueryType, -1: none
  int16_t v2;        // its byte in 2.2+'s, -1: none
  Body body;
  Route route;
  Answer answer;
  // Through the daemon: sent again on the node's new connection after an
  // outage, because applying it twice changes nothing. False where its
  // effect or answer would differ (ADD, COMPARE_SET, ...): its client hears
  // that the outcome is unknown instead.
  bool resend;
};

namespace table {
inline constexpr auto kNone = Body::none;
inline constexpr auto kLocal = Route::local;
inline constexpr auto kRead = Route::read;
inline constexpr auto kWrite = Route::write;

// PyTorch's name and bytes (torchstore/README.md says where each was
// verified), the body, and how the node agent serves it.
inline constexpr OpInfo kOps[] = {
    {Op::validate, "VALIDATE", -1, 0, Body::number, kLocal, Answer::none, false},
    {Op::set, "SET", 0, 1, Body::key_value, kWrite, Answer::none, true},
    {Op::compare_set, "COMPARE_SET", 1, 2, Body::compare_set, kWrite, Answer::value, false},
    {Op::get, "GET", 2, 3, Body::key, kRead, Answer::value, true},
    {Op::add, "ADD", 3, 4, Body::add, kRead, Answer::int64, false},
    {Op::check, "CHECK", 4, 5, Body::key_list, kRead, Answer::check, true},
    {Op::wait, "WAIT", 5, 6, Body::key_list, kRead, Answer::wait, true},
    {Op::get_num_keys, "GETNUMKEYS", 6, 7, kNone, kRead, Answer::int64, true},
    {Op::watch_key, "WATCH_KEY", 7, -1, Body::key, kLocal, Answer::watch, false},
    {Op::delete_key, "DELETE_KEY", 8, 8, Body::key, kWrite, Answer::int64, false},
    {Op::append, "APPEND", -1, 9, Body::key_value, kWrite, Answer::none, false},
    {Op::multi_get, "MULTI_GET", -1, 10, Body::key_list, kRead, Answer::values, true},
    {Op::multi_set, "MULTI_SET", -1, 11, Body::pair_list, kWrite, Answer::none, true},
    {Op::cancel_wait, "CANCEL_WAIT", -1, 12, kNone, kLocal, Answer::wait, false},
    {Op::ping, "PING", -1, 13, Body::number, kLocal, Answer::ping, false},
    {Op::queue_push, "QUEUE_PUSH", -1, 14, Body::key_value, kWrite, Answer::none, false},
    {Op::queue_pop, "QUEUE_POP", -1, 15, Body::key, kWrite, Answer::queue_pop, false},
    {Op::queue_len, "QUEUE_LEN", -1, 16, Body::key, kRead, Answer::int64, true},
};
static_assert(std::size(kOps) == kOpCount, "one row per Op");

// Rows in Op's order, so op_info indexes; bytes unique in each dialect.
constexpr bool rows_in_order() {
  for (size_t i = 0; i < kOpCount; ++i) {
    if (kOps[i].op != static_cast<Op>(i)) return false;
    for (size_t j = 0; j < i; ++j)
      if ((kOps[i].legacy >= 0 && kOps[i].legacy == kOps[j].legacy) ||
          (kOps[i].v2 >= 0 && kOps[i].v2 == kOps[j].v2))
        return false;
  }
  return true;
}
static_assert(rows_in_order(), "kOps rows follow Op's order; a byte names one Op per dialect");

}  // namespace table

// The row of `op`; every Op has one.
constexpr const OpInfo& op_info(Op op) noexcept { return table::kOps[static_cast<size_t>(op)]; }
// Every row, in Op's order.
constexpr const OpInfo (&all_ops() noexcept)[kOpCount] { return table::kOps; }

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
