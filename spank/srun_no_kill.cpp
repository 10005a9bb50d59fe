#include "srun_no_kill.hpp"

#include <fcntl.h>
#include <strings.h>

#include "dp/bounded_read.hpp"

namespace dp::spank {
namespace {

// srun's --no-kill[=set|off|no] (Slurm's arg_set_no_kill), -k; nullopt: another word.
std::optional<bool> no_kill_word(std::string_view w, bool from_env = false) {
  if (from_env)
    return strcasecmp(std::string(w).c_str(), "off") != 0 &&
           strcasecmp(std::string(w).c_str(), "no") != 0;
  if (w == "-k" || w == "--no-kill") return true;
  constexpr std::string_view kLong = "--no-kill=";
  if (w.substr(0, kLong.size()) != kLong) return std::nullopt;
  return no_kill_word(w.substr(kLong.size()), true);
}

}  // namespace

bool srun_asks_no_kill(const std::vector<std::string>& srun_argv, size_t command_words,
                       const char* env) {
  bool no_kill = env != nullptr && *no_kill_word(env, true);
  const size_t end = srun_argv.size() > command_words ? srun_argv.size() - command_words : 0;
  for (size_t i = 1; i < end; ++i)
    if (auto w = no_kill_word(srun_argv[i])) no_kill = *w;
  return no_kill;
}

bool words_ask_for_spares(const std::vector<std::string>& srun_argv) {
  for (size_t i = 1; i < srun_argv.size(); ++i) {
    const std::string& w = srun_argv[i];
    if (w.rfind("--dp-spares", 0) == 0 && w != "--dp-spares=0") return true;
  }
  return false;
}

std::vector<std::string> own_command_line() {
  const std::string text = read_bounded_at(AT_FDCWD, "/proc/self/cmdline", 1 << 20);
  std::vector<std::string> words;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\0', pos);
    words.emplace_back(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return words;
}

}  // namespace dp::spank
