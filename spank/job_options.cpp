#include "job_options.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace dp::spank {

std::string option_env_name(const std::string& option) {
  std::string name = std::string("_SLURM_SPANK_OPTION_") + kPluginName + "_" + option;
  for (size_t i = std::strlen("_SLURM_SPANK_OPTION_"); i < name.size(); ++i)
    if (!std::isalnum(static_cast<unsigned char>(name[i]))) name[i] = '_';
  return name;
}

Result<Options> options_from_environment() {
  Options opts;
  for (const auto& spec : option_specs()) {
    const std::string plain = option_env_name(spec.name);
    const char* value = std::getenv(("SLURM_SPANK_" + plain).c_str());
    if (value == nullptr) value = std::getenv(plain.c_str());
    if (value == nullptr) continue;
    // Flags travel as "" or, from some Slurm paths, the text "(null)".
    if (spec.arginfo == nullptr && (*value == '\0' || std::strcmp(value, "(null)") == 0))
      value = nullptr;
    auto r = apply_option(opts, spec.name, value);
    if (!r) return wrap_error(r.error(), r.error().message + " (given to sbatch/salloc)");
  }
  return opts;
}

}  // namespace dp::spank
