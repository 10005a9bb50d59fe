// Whether a step runs under Slurm's --no-kill, which --dp-spares needs (a
// lost node otherwise ends the step's tasks everywhere, and the job). No
// SPANK item and no field of slurmctld's step record says so, so srun's own
// word is read the way srun reads it: SLURM_NO_KILL from its environment,
// then its options before the task's command (the last one wins).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dp::spank {

// srun_argv: srun's whole command line; command_words: the task's command's
// length at its end (S_JOB_ARGV); env: SLURM_NO_KILL, or nullptr.
bool srun_asks_no_kill(const std::vector<std::string>& srun_argv, size_t command_words,
                       const char* env);

// Whether srun's command line asks for --dp-spares, read before srun reads
// its options (slurm_spank_init: the site's spares_no_kill); a word of the
// task's command that looks so counts too, which errs on the side of
// --no-kill for a step that may have spares.
bool words_ask_for_spares(const std::vector<std::string>& srun_argv);

// This process's command line (/proc/self/cmdline, bounded).
std::vector<std::string> own_command_line();

}  // namespace dp::spank
