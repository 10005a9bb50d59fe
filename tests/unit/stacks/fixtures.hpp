// Files of tests/fixtures/stacks, read for the stacks tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dp::stacks::fixtures {

inline std::string fixture_text(const std::string& name) {
  std::ifstream in(std::string(DP_STACKS_FIXTURES) + "/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<uint8_t> unhex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// A .hex fixture's bytes: hex lines, '#' lines are comments.
inline std::vector<std::byte> fixture_bytes(const std::string& name) {
  std::istringstream lines(fixture_text(name));
  std::vector<std::byte> out;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    for (uint8_t b : unhex(line)) out.push_back(std::byte{b});
  }
  return out;
}

}  // namespace dp::stacks::fixtures
