// A code object's line table: which source line an instruction belongs to,
// in the three formats CPython has used (python_layout.hpp's LineFormat),
// and in 3.11+'s location table (co_linetable, PEP 626/657) also the span of
// source it came from. Pure; bounded by the table's own length, and a
// malformed table gives no line rather than a wrong one.
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

// 3.8, 3.9: co_lnotab, pairs of (bytecode bytes, line) increments, the line's
// signed. `byte` is f_lasti; before the first instruction (-1) the line is
// co_firstlineno, as CPython's PyCode_Addr2Line says.
int line_for_lnotab(std::span<const uint8_t> table, int first_line, int64_t byte);

// 3.10: co_linetable, pairs of (bytecode bytes, signed line delta) where a
// delta of -128 means the range has no line. `byte` is f_lasti * 2; before
// the first instruction the line is co_firstlineno. nullopt: no line.
std::optional<int> line_for_pairs(std::span<const uint8_t> table, int first_line, int64_t byte);

}  // namespace dp::stacks
