#include "dp/nccl_watch.hpp"

#include <algorithm>

namespace dp {

std::vector<std::pair<std::string, std::string>> nccl_watch_environment(
    const NcclWatchPlaces& places, const std::function<bool(std::string_view)>& user_has) {
  std::vector<std::pair<std::string, std::string>> env;
  auto any_set = [&](const auto&... lists) {
    return ((std::any_of(std::begin(lists), std::end(lists), user_has)) || ...);
  };
  auto add = [&](const auto& names, const std::string& value) {
    for (std::string_view n : names) env.emplace_back(std::string(n), value);
  };
  if (!places.dump_dir.empty()) {
    if (!any_set(kFlightBufferNames)) add(kFlightBufferNames, std::to_string(kFlightBufferEntries));
    if (!any_set(kFlightDumpNames, kFlightPipeNames)) {
      add(kFlightDumpNames, places.dump_dir + "/" + std::string(kFlightDumpStem));
      add(kFlightPipeNames, places.dump_dir + "/" + std::string(kFlightPipeStem));
    }
  }
  if (places.ras_port > 0 && !user_has(kNcclRasAddr))
    env.emplace_back(std::string(kNcclRasAddr), "127.0.0.1:" + std::to_string(places.ras_port));
  return env;
}

std::string flight_dump_name(int rank) {
  return std::string(kFlightDumpStem) + std::to_string(rank);
}

std::string flight_pipe_name(int rank) {
  return std::string(kFlightPipeStem) + std::to_string(rank) + ".pipe";
}

}  // namespace dp
