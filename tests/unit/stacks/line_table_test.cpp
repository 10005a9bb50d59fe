// The location table decoder against tables real CPython 3.13 and 3.14 wrote
// (tests/fixtures/stacks/line-tables-*.txt: every code unit's line as the
// interpreter itself decodes it) and against tables built by hand, malformed
// ones included.
#include "dp/stacks/line_table.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "fixtures.hpp"
#include "synthetic_python.hpp"

namespace dp::stacks {
namespace {

using fixtures::fixture_text;
using fixtures::unhex;

struct RecordedCode {
  std::string name;
  int first_line = 0;
  std::vector<uint8_t> table;
  std::vector<std::pair<uint64_t, int>> lines;  // code unit, line
  std::vector<std::pair<uint64_t, SourceSpan>> spans;
};

std::vector<RecordedCode> recorded(const std::string& file) {
  std::istringstream in(fixture_text(file));
  std::vector<RecordedCode> out;
  for (std::string word; in >> word;) {
    if (word == "#") {
      std::getline(in, word);
    } else if (word == "code") {
      RecordedCode c;
      std::string hex;
      in >> c.name >> c.first_line >> hex;
      c.table = unhex(hex);
      out.push_back(c);
    } else if (word == "lines") {
      std::string rest;
      std::getline(in, rest);
      std::istringstream pairs(rest);
      for (std::string p; pairs >> p;) {
        const size_t colon = p.find(':');
        out.back().lines.emplace_back(std::stoull(p.substr(0, colon)),
                                      std::stoi(p.substr(colon + 1)));
      }
    } else if (word == "spans") {
      std::string rest;
      std::getline(in, rest);
      std::istringstream items(rest);
      for (std::string p; items >> p;) {  // unit:line,end_line,column,end_column
        SourceSpan s;
        char colon = 0, comma = 0;
        uint64_t unit = 0;
        std::istringstream(p) >> unit >> colon >> s.line >> comma >> s.end_line >> comma >>
            s.column >> comma >> s.end_column;
        out.back().spans.emplace_back(unit, s);
      }
    }
  }
  return out;
}

class RecordedTables : public testing::TestWithParam<const char*> {};

TEST_P(RecordedTables, EveryCodeUnitGetsTheInterpretersLineAndSpan) {
  const auto codes = recorded(GetParam());
  ASSERT_GE(codes.size(), 5u);
  size_t lines = 0, spans = 0;
  for (const auto& c : codes) {
    for (const auto& [unit, line] : c.lines) {
      EXPECT_EQ(line_for_instruction(c.table, c.first_line, unit), line)
          << c.name << " unit " << unit;
      ++lines;
    }
    // The units with columns: their span too.
    for (const auto& [unit, span] : c.spans) {
      EXPECT_EQ(span_for_instruction(c.table, c.first_line, unit), span)
          << c.name << " unit " << unit << " (span)";
      ++spans;
    }
  }
  EXPECT_GT(lines, 100u);
  EXPECT_GT(spans, 100u);
}

INSTANTIATE_TEST_SUITE_P(Python, RecordedTables,
                         testing::Values("line-tables-3.13.txt", "line-tables-3.14.txt"));

std::vector<uint8_t> concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(LineTable, EachKindMovesTheLineItsWay) {
  const auto table = concat({
      {0x80 | (0u << 3) | 1u, 0x05},               // short form, 2 units: line 10
      {0x80 | (11u << 3) | 0u, 4, 9},              // one line, delta 1: 11
      image::line_entry_no_columns(3, -5),         // 6
      {0x80 | (14u << 3) | 0u, 0x08, 0x00, 1, 2},  // long, delta 4: 10
      {0x80 | (15u << 3) | 1u},                    // no location, 2 units: keeps 10
      image::line_entry_no_columns(1, 300),        // a two-byte varint: 310
  });
  const std::pair<uint64_t, int> want[] = {{0, 10}, {1, 10}, {2, 11}, {3, 6},  {5, 6},
                                           {6, 10}, {7, 10}, {8, 10}, {9, 310}};
  for (const auto& [unit, line] : want) {
    EXPECT_EQ(line_for_instruction(table, 10, unit), line) << "unit " << unit;
  }
  EXPECT_EQ(line_for_instruction(table, 10, 10), std::nullopt);  // past the table

  const std::pair<uint64_t, std::optional<SourceSpan>> spans[] = {
      {0, SourceSpan{10, 10, 0, 5}},  // short form: columns 0 to 0 + 5
      {2, SourceSpan{11, 11, 4, 9}},  // one line: both columns given
      {3, std::nullopt},              // no columns
      {6, SourceSpan{10, 10, 0, 1}},  // long: each column stored plus one
      {7, std::nullopt},              // no location
      {10, std::nullopt},             // past the table
  };
  for (const auto& [unit, span] : spans) {
    EXPECT_EQ(span_for_instruction(table, 10, unit), span) << "unit " << unit;
  }
}

TEST(LineTable, MalformedTablesGiveNoLine) {
  const std::vector<uint8_t> cut_varint{0x80 | (13u << 3), 0x41};  // continuation, then nothing
  const std::vector<uint8_t> no_start{0x05};                       // first byte lacks the top bit
  const std::vector<uint8_t> start_inside{0x80 | (13u << 3),
                                          0x80};  // a varint byte with the top bit
  const std::vector<uint8_t> endless{0x80 | (13u << 3), 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x01};
  const std::vector<uint8_t> below_zero = image::line_entry_no_columns(1, -20);
  for (const auto* t : {&cut_varint, &no_start, &start_inside, &endless, &below_zero}) {
    EXPECT_EQ(line_for_instruction(*t, 5, 0), std::nullopt);
  }
  EXPECT_EQ(line_for_instruction({}, 5, 0), std::nullopt);
}

// 3.8/3.9's co_lnotab as CPython's PyCode_Addr2Line reads it: each pair moves
// the address first, the line only while the address stays at or below.
TEST(LineTable, LnotabAsPython38ReadsIt) {
  // def f():   (line 10)
  //     a = 1  (11: bytes 0-3)
  //     b = 2  (12: bytes 4-7)
  //            (a jump back to 11 at 8, then 300 lines on at 12, split past 127)
  const std::vector<uint8_t> t{0, 1, 4, 1, 4, static_cast<uint8_t>(-1), 4, 127, 0, 127, 0, 47};
  EXPECT_EQ(line_for_lnotab(t, 10, -1), 10);  // not started
  EXPECT_EQ(line_for_lnotab(t, 10, 0), 11);
  EXPECT_EQ(line_for_lnotab(t, 10, 3), 11);
  EXPECT_EQ(line_for_lnotab(t, 10, 4), 12);
  EXPECT_EQ(line_for_lnotab(t, 10, 8), 11);
  EXPECT_EQ(line_for_lnotab(t, 10, 12), 312);
  EXPECT_EQ(line_for_lnotab(t, 10, 400), 312);
  EXPECT_EQ(line_for_lnotab({}, 7, 20), 7);
  const std::vector<uint8_t> odd{0, 1, 4};  // a cut pair is not read
  EXPECT_EQ(line_for_lnotab(odd, 10, 4), 11);
}

// 3.10's pairs as its PyCode_Addr2Line reads them: ranges of zero length fold
// into the next, -128 is a range without a line, past the end is none.
TEST(LineTable, PairsAsPython310ReadsThem) {
  const std::vector<uint8_t> t{
      2, 1, 6, 1, 0, 127, 4, 2, 2, static_cast<uint8_t>(-128), 2, static_cast<uint8_t>(-5)};
  EXPECT_EQ(line_for_pairs(t, 10, -2), 10);
  EXPECT_EQ(line_for_pairs(t, 10, 0), 11);
  EXPECT_EQ(line_for_pairs(t, 10, 2), 12);
  EXPECT_EQ(line_for_pairs(t, 10, 7), 12);
  EXPECT_EQ(line_for_pairs(t, 10, 8), 141);  // 12 + 127 + 2: the zero-length range folded in
  EXPECT_EQ(line_for_pairs(t, 10, 12), std::nullopt);  // no line
  EXPECT_EQ(line_for_pairs(t, 10, 14), 136);
  EXPECT_EQ(line_for_pairs(t, 10, 16), std::nullopt);  // past the table
  EXPECT_EQ(line_for_pairs({}, 10, 0), std::nullopt);
}

}  // namespace
}  // namespace dp::stacks
