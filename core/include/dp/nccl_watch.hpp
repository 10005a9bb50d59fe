// What a node's NCCL ranks are told so that their hangs can be named (issue
// 57): PyTorch's flight recorder kept (its buffer), dumped into the node
// agent's folder for the step when the agent writes a rank's pipe, and NCCL's
// RAS service on a port of the step's own instead of every job's 28028.
// Pure: the places in, the variables out; slurmstepd sets them, the node
// agent reads what they point at (agent/flight_reader.hpp).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dp {

// PyTorch's names; each pair is read as one setting (newer releases the
// TORCH_FR_ name first), so both are set, or neither.
inline constexpr std::string_view kFlightBufferNames[] = {"TORCH_NCCL_TRACE_BUFFER_SIZE",
                                                          "TORCH_FR_BUFFER_SIZE"};
inline constexpr std::string_view kFlightDumpNames[] = {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
                                                        "TORCH_FR_DUMP_TEMP_FILE"};
inline constexpr std::string_view kFlightPipeNames[] = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE",
                                                        "TORCH_FR_DEBUG_INFO_PIPE_FILE"};
inline constexpr std::string_view kNcclRasAddr = "NCCL_RAS_ADDR";
// PyTorch's default buffer from 2.6 on; earlier releases keep none unless told.
inline constexpr int kFlightBufferEntries = 2000;
// Inside the agent's folder: rank R dumps to dump_rank<R>, listens on pipe_rank<R>.pipe.
inline constexpr std::string_view kFlightDumpStem = "dump_rank";
inline constexpr std::string_view kFlightPipeStem = "pipe_rank";

struct NcclWatchPlaces {
  std::string dump_dir;  // the agent's folder for the step; empty: none
  int ras_port = 0;      // held by the agent on 127.0.0.1; 0: none
};

// The task's variables. What the user set is theirs: a pair (the buffer),
// or the four names of the dump and its pipe, or NCCL_RAS_ADDR, that the
// user set any name of is left whole (`user_has` says).
std::vector<std::pair<std::string, std::string>> nccl_watch_environment(
    const NcclWatchPlaces& places, const std::function<bool(std::string_view)>& user_has);

// A rank's files in the folder, as PyTorch names them: "dump_rank3", "pipe_rank3.pipe".
std::string flight_dump_name(int rank);
std::string flight_pipe_name(int rank);

}  // namespace dp
