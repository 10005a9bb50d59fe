// Placeholder until the daemon lands (issue 4).
#include <cstdio>
int main() {
  std::fprintf(stderr, "dp-rendezvousd: not implemented yet\n");
  return 1;
}
