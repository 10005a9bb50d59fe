// A fixture folder's recordings (its *.txt), each loaded, in the order of
// their names: every run replays them alike.
#pragma once

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

namespace dp::test {

template <class Load>
auto load_fixture_files(const std::filesystem::path& dir, Load load) {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".txt") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<decltype(load(std::declval<const std::filesystem::path&>()))> out;
  for (const auto& p : paths) out.push_back(load(p));
  return out;
}

}  // namespace dp::test
