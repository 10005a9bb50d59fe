// Placeholder until the trainer lands (issue 6): prints what the plugin wired.
#include <cstdio>
#include <cstdlib>
static const char* env(const char* k) { const char* v = std::getenv(k); return v ? v : "-"; }
int main() {
  std::printf("rank %s/%s local %s node %s master %s:%s\n", env("RANK"), env("WORLD_SIZE"),
              env("LOCAL_RANK"), env("NODE_RANK"), env("MASTER_ADDR"), env("MASTER_PORT"));
  return 0;
}
