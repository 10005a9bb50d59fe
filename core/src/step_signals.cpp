#include "dp/step_signals.hpp"

#include <signal.h>

namespace dp {

bool is_step_signal(int sig) noexcept {
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) return true;
  switch (sig) {
    case SIGHUP:
    case SIGINT:
    case SIGQUIT:
    case SIGUSR1:
    case SIGUSR2:
    case SIGPIPE:
    case SIGALRM:
    case SIGTERM:
    case SIGSTKFLT:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
    case SIGURG:
    case SIGXCPU:
    case SIGXFSZ:
    case SIGVTALRM:
    case SIGPROF:
    case SIGWINCH:
    case SIGIO:
    case SIGPWR: return true;
    default: return false;
  }
}

bool signal_ends_step(int sig) noexcept {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT || sig == SIGKILL;
}

std::string signal_name(int sig) {
  static const struct {
    int sig;
    const char* name;
  } kNames[] = {{SIGHUP, "HUP"},   {SIGINT, "INT"},       {SIGQUIT, "QUIT"}, {SIGILL, "ILL"},
                {SIGTRAP, "TRAP"}, {SIGABRT, "ABRT"},     {SIGBUS, "BUS"},   {SIGFPE, "FPE"},
                {SIGKILL, "KILL"}, {SIGUSR1, "USR1"},     {SIGSEGV, "SEGV"}, {SIGUSR2, "USR2"},
                {SIGPIPE, "PIPE"}, {SIGALRM, "ALRM"},     {SIGTERM, "TERM"}, {SIGSTKFLT, "STKFLT"},
                {SIGCHLD, "CHLD"}, {SIGCONT, "CONT"},     {SIGSTOP, "STOP"}, {SIGTSTP, "TSTP"},
                {SIGTTIN, "TTIN"}, {SIGTTOU, "TTOU"},     {SIGURG, "URG"},   {SIGXCPU, "XCPU"},
                {SIGXFSZ, "XFSZ"}, {SIGVTALRM, "VTALRM"}, {SIGPROF, "PROF"}, {SIGWINCH, "WINCH"},
                {SIGIO, "IO"},     {SIGPWR, "PWR"},       {SIGSYS, "SYS"}};
  for (const auto& n : kNames)
    if (n.sig == sig) return n.name;
  if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    return sig == SIGRTMIN ? "RTMIN" : "RTMIN+" + std::to_string(sig - SIGRTMIN);
  return std::to_string(sig);
}

std::optional<int> user_signal_cause(const std::optional<ReceivedSignal>& received,
                                     std::optional<int> died_of) noexcept {
  if (!received || received->sig <= 0) return std::nullopt;
  if (died_of && *died_of == received->sig) return received->sig;
  const bool recent = received->before_end >= std::chrono::milliseconds(0) &&
                      received->before_end <= kUserEndWindow;
  if (signal_ends_step(received->sig) && recent) return received->sig;
  return std::nullopt;
}

const char* user_signal_verdict(int sig) noexcept {
  if (sig == SIGINT) return "interrupted";
  return signal_ends_step(sig) ? "cancelled" : "signalled";
}

std::string user_signal_headline(int sig) {
  if (sig == SIGINT)
    return "ended by the user (SIGINT: Ctrl-C twice at srun, or scancel --signal=INT)";
  if (sig == SIGTERM)
    return "cancelled by the user (SIGTERM from Slurm: scancel; also a time limit or pre-emption)";
  const std::string name = signal_name(sig);
  if (signal_ends_step(sig)) return "cancelled by the user (SIG" + name + ": scancel --signal)";
  return "signalled (" + name + ") by the user (scancel --signal=" + name + " or --signal=" + name +
         "@<seconds>), and a task did not survive it";
}

}  // namespace dp
