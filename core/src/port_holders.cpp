#include "dp/port_holders.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <utility>
#include <vector>

namespace dp {
namespace {

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t a = 0;
  while (a < line.size() && out.size() < 12) {
    while (a < line.size() && line[a] == ' ') ++a;
    size_t b = a;
    while (b < line.size() && line[b] != ' ') ++b;
    if (b > a) out.push_back(line.substr(a, b - a));
    a = b;
  }
  return out;
}

template <class T>
bool number(std::string_view s, T& v, int base) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

PortHolders port_holders(std::string_view text, int lo, int hi, bool cut, size_t max_lines) {
  // A port counts once per uid, whatever sockets (v4, v6, several addresses).
  std::set<std::pair<unsigned, int>> seen;
  PortHolders out;
  out.partial = cut;
  size_t a = 0, lines = 0;
  while (a < text.size()) {
    if (lines++ == max_lines) {
      out.partial = true;
      break;
    }
    size_t b = text.find('\n', a);
    if (b == std::string_view::npos) b = text.size();
    const auto w = words(text.substr(a, b - a));
    a = b + 1;
    // sl local_address rem_address st tx:rx tr:tm retrnsmt uid ...
    if (w.size() < 8) continue;
    const size_t colon = w[1].rfind(':');
    int port = 0;
    unsigned state = 0, uid = 0;
    if (colon == std::string_view::npos || !number(w[1].substr(colon + 1), port, 16) ||
        !number(w[3], state, 16) || !number(w[7], uid, 10))
      continue;
    if (port < lo || port > hi) continue;
    out.time_wait |= state == 0x06;
    // 0x0A listening, 0x07 bound (closed); a connection's local port is not a hold.
    if (state != 0x0A && state != 0x07) continue;
    seen.emplace(uid, port);
  }
  for (const auto& [uid, port] : seen) ++out.by_uid[uid];
  return out;
}

std::string holders_text(const PortHolders& holders) {
  std::vector<std::pair<int, unsigned>> by_count;
  for (const auto& [uid, n] : holders.by_uid) by_count.emplace_back(n, uid);
  std::sort(by_count.begin(), by_count.end(),
            [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string out;
  for (const auto& [n, uid] : by_count) {
    if (!out.empty()) out += ", ";
    out +=
        "uid " + std::to_string(uid) + " (" + std::to_string(n) + (n == 1 ? " port)" : " ports)");
  }
  if (holders.partial && !out.empty())
    out += " (the node's socket tables were too long to read whole: there may be others)";
  return out;
}

}  // namespace dp
