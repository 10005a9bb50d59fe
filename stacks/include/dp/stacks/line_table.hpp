// CPython's location table (co_linetable, PEP 626/657, 3.11+): which source
// line an instruction belongs to. Pure; bounded by the table's own length,
// and a malformed table gives no line rather than a wrong one.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace dp::stacks {

// The line of the instruction at `code_unit` (an index in 2-byte code units
// into co_code_adaptive), starting from co_firstlineno. nullopt when the
// table does not cover it or is malformed.
std::optional<int> line_for_instruction(std::span<const uint8_t> table, int first_line,
                                        uint64_t code_unit);

}  // namespace dp::stacks
