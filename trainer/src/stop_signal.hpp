// SIGTERM / SIGUSR1 (Slurm's pre-emption and --signal warnings) only set a
// flag; the training loop agrees on it across ranks, checkpoints and exits.
#pragma once

namespace dpt {

void install_stop_handlers();
bool stop_requested();
int stop_signal();          // the signal that asked, 0 if none
void clear_stop_request();  // tests

}  // namespace dpt
