#include "dp/torchstore/opcodes.hpp"

#include <cstdio>
#include <iterator>

namespace dp::torchstore {
namespace {

constexpr auto kNone = Body::none;
constexpr auto kLocal = Route::local;
constexpr auto kRead = Route::read;
constexpr auto kWrite = Route::write;

// PyTorch's name and bytes (torchstore/README.md says where each was
// verified), the body, and how the node agent serves it.
constexpr OpInfo kOps[] = {
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

int byte_in(Dialect d, const OpInfo& row) { return d == Dialect::legacy ? row.legacy : row.v2; }

std::string hex_byte(uint8_t byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", byte);
  return text;
}

}  // namespace

const OpInfo& op_info(Op op) noexcept { return kOps[static_cast<size_t>(op)]; }

const OpInfo (&all_ops() noexcept)[kOpCount] { return kOps; }

std::optional<Op> op_from_byte(Dialect d, uint8_t byte) {
  for (const OpInfo& row : kOps)
    if (byte_in(d, row) == byte) return row.op;
  return std::nullopt;
}

std::optional<uint8_t> op_byte(Dialect d, Op op) {
  const int byte = byte_in(d, op_info(op));
  if (byte < 0) return std::nullopt;
  return static_cast<uint8_t>(byte);
}

const char* op_name(Op op) { return op_info(op).name; }

std::string describe_opcode(Dialect d, uint8_t byte) {
  if (auto op = op_from_byte(d, byte))
    return std::string(op_name(*op)) + " (" + hex_byte(byte) + ")";
  // Seen after QUEUE_LEN in a recent PyTorch checkout, not in a release we
  // could read: named so a log says what the client wanted.
  if (d == Dialect::v2 && byte == 17)
    return "LIST_KEYS (0x11), from a PyTorch newer than 2.8, not served";
  if (d == Dialect::v2 && byte == 18)
    return "BARRIER (0x12), from a PyTorch newer than 2.8, not served";
  return "unknown opcode " + hex_byte(byte);
}

const char* dialect_name(Dialect d) {
  return d == Dialect::legacy ? "PyTorch 1.13/2.0" : "PyTorch 2.2+";
}

}  // namespace dp::torchstore
