#include "keeper_contract.hpp"

#include <algorithm>
#include <array>

#include "dp/params.hpp"

namespace dp::agent {
namespace {

struct Word {
  KeeperLine::Kind kind;
  const char* word;
  int numbers;
};
constexpr std::array<Word, 8> kWords = {{{KeeperLine::Kind::keeper, "keeper", 2},
                                         {KeeperLine::Kind::started, "started", 2},
                                         {KeeperLine::Kind::exited, "exited", 1},
                                         {KeeperLine::Kind::stopped, "stopped", 0},
                                         {KeeperLine::Kind::start, "start", 2},
                                         {KeeperLine::Kind::stop, "stop", 1},
                                         {KeeperLine::Kind::fence, "fence", 0},
                                         {KeeperLine::Kind::exit, "exit", 0}}};

}  // namespace

std::string format_keeper_line(const KeeperLine& l) {
  for (const Word& w : kWords) {
    if (w.kind != l.kind) continue;
    std::string out = w.word;
    if (w.numbers > 0) out += " " + std::to_string(l.a);
    if (w.numbers > 1) out += " " + std::to_string(l.b);
    return out + "\n";
  }
  return "exit\n";
}

std::optional<KeeperLine> parse_keeper_line(std::string_view line) {
  if (line.size() > kMaxKeeperLine) return std::nullopt;
  const size_t sp = line.find(' ');
  const std::string_view head = line.substr(0, sp);
  for (const Word& w : kWords) {
    if (head != w.word) continue;
    KeeperLine l;
    l.kind = w.kind;
    std::string_view rest = sp == std::string_view::npos ? "" : line.substr(sp + 1);
    long long* fields[] = {&l.a, &l.b};
    for (int i = 0; i < w.numbers; ++i) {
      const size_t end = std::min(rest.find(' '), rest.size());
      // Node ranks are -1 for none; a wait status, a pid, ticks fit in 63 bits.
      auto n = parse_whole_number(rest.substr(0, end), -1, (1LL << 62));
      if (!n) return std::nullopt;
      *fields[i] = *n;
      rest = end < rest.size() ? rest.substr(end + 1) : std::string_view();
    }
    if (!rest.empty()) return std::nullopt;
    return l;
  }
  return std::nullopt;
}

}  // namespace dp::agent
