// Reads a recording of tests/fixtures/torch-store (record.py's format): one
// event a line, in the order the relay saw them, "<conn> open",
// "<conn> > <hex>" (client to server), "<conn> < <hex>" (server to client),
// "<conn> close-client" or "<conn> close-server"; "#" lines are comments.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dp::torchstore::testing {

struct Event {
  enum class Kind { open, to_server, to_client, close_client, close_server };
  uint64_t conn = 0;
  Kind kind = Kind::open;
  std::string bytes;
};

struct Recording {
  std::string name;  // the file's name, e.g. torch-2.6-init.txt
  std::vector<Event> events;

  // Everything a connection's client sent, in order.
  std::map<uint64_t, std::string> client_streams() const;
  // Everything the real server sent each connection.
  std::map<uint64_t, std::string> server_streams() const;
  bool closed_by_server(uint64_t conn) const;
};

// Every recording in the fixture folder, by name; a test fails loudly when
// the folder or a line cannot be read.
std::vector<Recording> load_recordings();
std::string hex(const std::string& bytes);

}  // namespace dp::torchstore::testing
