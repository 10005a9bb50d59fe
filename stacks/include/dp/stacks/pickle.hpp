// Python's pickle, the subset that built-in values use (None, bool, int,
// float, str, bytes, list, tuple, dict; protocols 2 to 5), read without
// Python: PyTorch's flight recorder dumps its state so (flight_recorder.hpp).
// Pure and bounded: no opcode that names a class or calls one (GLOBAL,
// REDUCE, BUILD, ...) is taken, so nothing of the input runs; every value is a
// node of one arena owned by the document (a memo that makes a container
// hold itself is a cycle of indices, never a leak); the nodes, the stack and
// the depth a reader walks are capped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dp/result.hpp"

namespace dp::stacks::pickle {

enum class Kind : uint8_t { none, boolean, integer, real, text, list, dict };

struct Node {
  Kind kind = Kind::none;
  int64_t integer = 0;          // boolean (0/1) and integer
  double real = 0;              // real
  std::string text;             // text: str or bytes, as they were
  std::vector<uint32_t> items;  // list and tuple: the items; dict: key, value, key, value, ...
};

// The defaults hold a dump of PyTorch's buffer at ten times its default size
// (20 000 entries: about 10 MiB, half a million values) in at most about
// 100 MiB of the reader's memory.
struct Limits {
  size_t max_bytes = 16u << 20;  // of the input
  size_t max_nodes = 1u << 20;   // values made (each costs an opcode of input), ~80 bytes each
  size_t max_stack = 1u << 20;   // values on the stack and marks
  size_t max_items = 4u << 20;   // in all containers together (a memo repeats without bytes)
};

class Document {
 public:
  Document(std::vector<Node> nodes, uint32_t root) : nodes_(std::move(nodes)), root_(root) {}
  const Node& root() const { return nodes_[root_]; }
  const Node& at(uint32_t i) const { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  // A dict's value for a text key; nullptr when `n` is no dict or lacks it.
  const Node* get(const Node& n, std::string_view key) const;

 private:
  std::vector<Node> nodes_;
  uint32_t root_ = 0;
};

// The whole pickle, up to and including STOP. An error names the opcode (or
// what is missing) and its offset: truncated input (a dump still being
// written), an opcode outside the subset, a bound.
Result<Document> parse(std::string_view bytes, const Limits& limits = {});

}  // namespace dp::stacks::pickle
