// CPython's location table (co_linetable, PEP 626/657, 3.11+): which source
// line an instruction belongs to, and the span of source it came from. Pure;
// bounded by the table's own length, and a malformed table gives no line
// rather than a wrong one.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "dp/stacks/stacks.hpp"

namespace dp::stacks {

// The line of the instruction at `code_unit` (an index in 2-byte code units
// into co_code_adaptive), starting from co_firstlineno. nullopt when the
// table does not cover it or is malformed.
std::optional<int> line_for_instruction(std::span<const uint8_t> table, int first_line,
                                        uint64_t code_unit);

// The instruction's whole source span, as co_positions() gives it: nullopt
// where the entry has no columns or no location, or the table is malformed.
std::optional<SourceSpan> span_for_instruction(std::span<const uint8_t> table, int first_line,
                                               uint64_t code_unit);

}  // namespace dp::stacks
