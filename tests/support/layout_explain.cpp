// dp_layout_explain FILE: a step's facts in the recorded-layout format
// (tests/README.md) through the layout core's one entry, printed as srun's
// --dp-explain prints each task's variables: "task N on HOST: VAR=value ...",
// then "hint: ..." when the plan has one. scripts/gpu-check starts its tasks
// with exactly these variables. Host lists are plain, comma-separated names
// (no libslurm here: it runs on GPU machines without Slurm). Exit 1 when the
// core refuses the step, printing why.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "layout_fixture.hpp"

namespace {

dp::Result<std::vector<std::string>> plain_hosts(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  for (const auto& h : out)
    if (h.empty() || h.find_first_of("[]") != std::string::npos)
      return dp::make_error(dp::Errc::invalid_argument,
                            "hosts '" + list + "': plain names only, comma-separated");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dp_layout_explain FILE (a step's facts, tests/README.md)\n");
    return 2;
  }
  const auto f = dp::test::load_layout_fixture(argv[1]);
  for (const auto& e : f.errors) std::fprintf(stderr, "dp_layout_explain: %s\n", e.c_str());
  if (!f.errors.empty()) return 2;
  const auto r = dp::test::replay_layout_fixture(f, plain_hosts);
  if (!r.refused.empty()) {
    std::printf("%s\n", r.refused.c_str());
    return 1;
  }
  for (const auto& l : r.lines) std::printf("%s\n", l.c_str());
  if (!r.hint.empty()) std::printf("hint: %s\n", r.hint.c_str());
  return 0;
}
