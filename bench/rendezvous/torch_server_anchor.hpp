// The anchor of dp-store-bench: the same simulated ranks' workflow
// (torch_workflow.hpp), one TCP connection per rank, straight to PyTorch's
// own TCPStore server (tcpstore_bench.py --serve, the installed PyTorch).
// Clients in C++ on one epoll loop, as on our side, so the two runs differ
// only in the server: one Python process per client would measure the
// machine's scheduler, not the store.
#pragma once

#include <string>

namespace dp::bench {

struct AnchorRun {
  double seconds = 0;     // first connect to the last rank out of the barrier
  double server_cpu = 0;  // the server process's CPU seconds
  long server_rss_kib = 0;
  int failures = 0;
};

// One run with a fresh server; exits the bench with a message when the
// server does not start.
AnchorRun run_torch_server(const std::string& script, int world);

}  // namespace dp::bench
