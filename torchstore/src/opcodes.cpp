#include "dp/torchstore/opcodes.hpp"

#include <cstdio>

namespace dp::torchstore {
namespace {

// Each operation, PyTorch's name of it and its byte in PyTorch's enum
// QueryType of each dialect (-1: the dialect has none).
struct Row {
  Op op;
  const char* name;
  int legacy;
  int v2;
};
constexpr Row kRows[] = {
    {Op::validate, "VALIDATE", -1, 0},
    {Op::set, "SET", 0, 1},
    {Op::compare_set, "COMPARE_SET", 1, 2},
    {Op::get, "GET", 2, 3},
    {Op::add, "ADD", 3, 4},
    {Op::check, "CHECK", 4, 5},
    {Op::wait, "WAIT", 5, 6},
    {Op::get_num_keys, "GETNUMKEYS", 6, 7},
    {Op::watch_key, "WATCH_KEY", 7, -1},
    {Op::delete_key, "DELETE_KEY", 8, 8},
    {Op::append, "APPEND", -1, 9},
    {Op::multi_get, "MULTI_GET", -1, 10},
    {Op::multi_set, "MULTI_SET", -1, 11},
    {Op::cancel_wait, "CANCEL_WAIT", -1, 12},
    {Op::ping, "PING", -1, 13},
    {Op::queue_push, "QUEUE_PUSH", -1, 14},
    {Op::queue_pop, "QUEUE_POP", -1, 15},
    {Op::queue_len, "QUEUE_LEN", -1, 16},
};

int byte_in(Dialect d, const Row& row) { return d == Dialect::legacy ? row.legacy : row.v2; }

std::string hex_byte(uint8_t byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", byte);
  return text;
}

}  // namespace

std::optional<Op> op_from_byte(Dialect d, uint8_t byte) {
  for (const Row& row : kRows)
    if (byte_in(d, row) == byte) return row.op;
  return std::nullopt;
}

std::optional<uint8_t> op_byte(Dialect d, Op op) {
  for (const Row& row : kRows)
    if (row.op == op && byte_in(d, row) >= 0) return static_cast<uint8_t>(byte_in(d, row));
  return std::nullopt;
}

const char* op_name(Op op) {
  for (const Row& row : kRows)
    if (row.op == op) return row.name;
  return "?";
}

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
