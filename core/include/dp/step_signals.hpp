// The signals Slurm delivers to every process of a step (scancel --signal,
// --signal=SIG@T, srun's forwarded Ctrl-C, the cancel's SIGTERM) are the
// tasks', and a step the user signalled did not fail: which signals the
// step's services (dp-nodeagent, dp-rendezvousd) must outlive, which ones
// end the step, how a task's end after one is attributed to it, and how the
// step report words it. Pure: signal numbers in, booleans and text out.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace dp {

// An asynchronous signal a user or Slurm may send the step (HUP, INT, QUIT,
// USR1, USR2, PIPE, ALRM, TERM, STKFLT, TSTP, TTIN, TTOU, URG, XCPU, XFSZ,
// VTALRM, PROF, WINCH, IO, PWR, the real-time ones): the services ignore or
// record it. Not: KILL and STOP (they cannot), CONT (it only resumes), CHLD,
// and the faults (SEGV, BUS, FPE, ILL, TRAP, SYS, ABRT), which must still end
// a process that hit one. Async-signal-safe (a forked child's loop uses it).
bool is_step_signal(int sig) noexcept;

// The signal asks the step to end (TERM: scancel or the time limit; INT:
// srun's second Ctrl-C; HUP, QUIT; KILL): every task that ends after it ends
// because of it. The others (USR1, ...) are notices the tasks may handle.
bool signal_ends_step(int sig) noexcept;

// "USR1", "TERM", "RTMIN+2"; the number for anything else.
std::string signal_name(int sig);

// The last step signal a node received, and how long before a task's end.
struct ReceivedSignal {
  int sig = 0;
  std::chrono::milliseconds before_end{0};
};

// Tasks still ending this long after a step-ending signal are taken to end
// by it (Slurm's KillWait between SIGTERM and SIGKILL is 30 s by default).
inline constexpr std::chrono::milliseconds kUserEndWindow{120'000};

// Whether a task's end (died_of: its terminating signal, if any) is the
// user's signal rather than a failure: it died of exactly the signal the
// node received, or the signal ends the step and came at most
// kUserEndWindow before. The signal that explains it, or nothing.
std::optional<int> user_signal_cause(const std::optional<ReceivedSignal>& received,
                                     std::optional<int> died_of) noexcept;

// The step report's verdict for a step ended by a user's signal: cancelled
// (TERM, KILL, HUP, QUIT), interrupted (INT), signalled (the notices).
const char* user_signal_verdict(int sig) noexcept;

// What srun's last line says: "cancelled by the user (SIGTERM: scancel, ...)".
std::string user_signal_headline(int sig);

}  // namespace dp
