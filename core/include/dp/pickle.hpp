// Python's pickle read without Python: the subset built-in values use
// (None, bool, int, float, str, bytes, list, tuple, dict, set; protocols 2 to
// 5), and where asked, the records that name a class (GLOBAL, STACK_GLOBAL,
// REDUCE, NEWOBJ, BUILD) as inert objects: a class's dotted name, its
// arguments and its state, never looked up or called. PyTorch's flight
// recorder dumps its buffer as built-in values (stacks/flight_recorder.hpp);
// torchrun's rendezvous keeps its state as objects
// (torchstore/rendezvous_state.hpp). Pure and bounded: nothing of the input
// runs; every value is a node of one arena owned by the document (a memo
// that makes a container hold itself is a cycle of indices, never a leak);
// the nodes, the stack and the depth a reader walks are capped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dp/result.hpp"

namespace dp::pickle {

// set: set and frozenset. type: a class's dotted name (GLOBAL). object: what
// REDUCE or NEWOBJ would have made of a class and its arguments.
enum class Kind : uint8_t { none, boolean, integer, real, text, list, dict, set, type, object };

struct Node {
  Kind kind = Kind::none;
  uint32_t offset = 0;          // text: where its bytes begin in the input (for an edit in place)
  int64_t integer = 0;          // boolean (0/1) and integer
  double real = 0;              // real
  std::string text;             // text: str or bytes, as they were; type: "module.name"
  std::vector<uint32_t> items;  // list, tuple and set: the items; dict: key, value, key, value,
                                // ...; object: its type, its arguments (a list), its state once
                                // BUILD gave one
};

// The defaults hold a dump of PyTorch's buffer at ten times its default size
// (20 000 entries: about 10 MiB, half a million values) in at most about
// 100 MiB of the reader's memory.
struct Limits {
  size_t max_bytes = 16u << 20;  // of the input
  size_t max_nodes = 1u << 20;   // values made (each costs an opcode of input), ~80 bytes each
  size_t max_stack = 1u << 20;   // values on the stack and marks
  size_t max_items = 4u << 20;   // in all containers together (a memo repeats without bytes)
  bool objects = false;          // take the records that name a class (else an error names them)
};

class Document {
 public:
  Document(std::vector<Node> nodes, uint32_t root) : nodes_(std::move(nodes)), root_(root) {}
  const Node& root() const { return nodes_[root_]; }
  const Node& at(uint32_t i) const { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  // A dict's value for a text key, or an object's in its state (a dict);
  // nullptr when `n` is neither or lacks it.
  const Node* get(const Node& n, std::string_view key) const;
  // An object's type's dotted name; empty for any other node.
  std::string_view type_name(const Node& n) const;

 private:
  std::vector<Node> nodes_;
  uint32_t root_ = 0;
};

// The whole pickle, up to and including STOP. An error names the opcode (or
// what is missing) and its offset: truncated input (a dump still being
// written), an opcode outside the subset, a bound.
Result<Document> parse(std::string_view bytes, const Limits& limits = {});

}  // namespace dp::pickle
