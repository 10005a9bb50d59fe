#include "skipped_step.hpp"

#include "dp/params.hpp"

namespace dp::spank {

std::string format_skipped_step(uint32_t job, uint32_t step, int status) {
  return std::to_string(job) + "." + std::to_string(step) + ":" + std::to_string(status);
}

std::optional<int> skipped_step_status(std::string_view value, uint32_t job, uint32_t step) {
  const std::string ids = std::to_string(job) + "." + std::to_string(step) + ":";
  if (value.substr(0, ids.size()) != ids) return std::nullopt;
  auto status = parse_whole_number(value.substr(ids.size()), 0, 255);
  if (!status) return std::nullopt;
  return static_cast<int>(*status);
}

int srun_error_status(const char* slurm_exit_error) {
  if (slurm_exit_error == nullptr) return 1;
  auto status = parse_whole_number(slurm_exit_error, 1, 255);
  return status ? static_cast<int>(*status) : 1;
}

}  // namespace dp::spank
