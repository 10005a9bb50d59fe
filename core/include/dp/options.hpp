// The user's --dp-* options, parsed strictly. Pure: no Slurm types.
//
// Every field is optional so job-level values (sbatch/salloc) can be
// overlaid by step-level ones (srun wins) field by field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/params.hpp"  // parse_integer
#include "dp/result.hpp"

namespace dp {

struct Options {
  std::optional<int> world;           // 0: auto (the step's task count)
  std::optional<int> tiles;           // accelerator tiles per task
  std::optional<int> master_port;     // 0: auto
  std::optional<bool> explain;        // print the layout, start nothing
  std::optional<bool> verbose;        // plan and daemon messages on stderr
  std::optional<std::string> report;  // step report file (JSON), written by srun at step end

  bool any() const noexcept {
    return world || tiles || master_port || explain || verbose || report;
  }
};

struct OptionSpec {
  const char* name;     // without the leading "--", as registered with Slurm
  const char* arginfo;  // nullptr: a flag without value
  const char* usage;
};
// Every option slurm-dp registers, in --help order.
const std::vector<OptionSpec>& option_specs();

// Applies one option. `value` is nullptr for flags. Idempotent: Slurm may
// call an option callback twice with the same value. Error messages name
// the option and say the fix (no "slurm-dp:" prefix; the caller adds it).
Result<void> apply_option(Options& opts, std::string_view name, const char* value);

// Fields set in `top` replace those of `base`.
Options overlay(const Options& base, const Options& top);

}  // namespace dp
