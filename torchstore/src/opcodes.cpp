#include "dp/torchstore/opcodes.hpp"

#include <cstdio>

namespace dp::torchstore {
namespace {

int byte_in(Dialect d, const OpInfo& row) { return d == Dialect::legacy ? row.legacy : row.v2; }

std::string hex_byte(uint8_t byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", byte);
  return text;
}

}  // namespace

std::optional<Op> op_from_byte(Dialect d, uint8_t byte) {
  for (const OpInfo& row : all_ops())
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
