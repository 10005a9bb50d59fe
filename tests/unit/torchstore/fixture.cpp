#include "fixture.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dp::torchstore::testing {
namespace {

std::string unhex(const std::string& text) {
  if (text.size() % 2) throw std::runtime_error("odd hex length");
  std::string out;
  for (size_t i = 0; i < text.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
  return out;
}

Event parse_line(const std::string& line) {
  std::istringstream in(line);
  Event e;
  std::string what, data;
  if (!(in >> e.conn >> what)) throw std::runtime_error("unreadable line: " + line);
  if (what == "open") {
    e.kind = Event::Kind::open;
  } else if (what == "close-client") {
    e.kind = Event::Kind::close_client;
  } else if (what == "close-server") {
    e.kind = Event::Kind::close_server;
  } else if ((what == ">" || what == "<") && in >> data) {
    e.kind = what == ">" ? Event::Kind::to_server : Event::Kind::to_client;
    e.bytes = unhex(data);
  } else {
    throw std::runtime_error("unreadable line: " + line);
  }
  return e;
}

Recording load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  Recording r{path.filename().string(), {}};
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') r.events.push_back(parse_line(line));
  return r;
}

std::map<uint64_t, std::string> streams(const std::vector<Event>& events, Event::Kind kind) {
  std::map<uint64_t, std::string> out;
  for (const auto& e : events)
    if (e.kind == kind) out[e.conn] += e.bytes;
  return out;
}

}  // namespace

std::map<uint64_t, std::string> Recording::client_streams() const {
  return streams(events, Event::Kind::to_server);
}

std::map<uint64_t, std::string> Recording::server_streams() const {
  return streams(events, Event::Kind::to_client);
}

bool Recording::closed_by_server(uint64_t conn) const {
  return std::any_of(events.begin(), events.end(), [&](const Event& e) {
    return e.conn == conn && e.kind == Event::Kind::close_server;
  });
}

std::vector<Recording> load_recordings() {
  std::vector<Recording> out;
  for (const auto& entry : std::filesystem::directory_iterator(DP_TORCH_STORE_FIXTURES))
    if (entry.path().extension() == ".txt") out.push_back(load(entry.path()));
  std::sort(out.begin(), out.end(),
            [](const Recording& a, const Recording& b) { return a.name < b.name; });
  if (out.empty()) throw std::runtime_error("no recordings in " DP_TORCH_STORE_FIXTURES);
  return out;
}

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

}  // namespace dp::torchstore::testing
