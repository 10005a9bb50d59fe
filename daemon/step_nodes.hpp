// The step's node addresses as the daemon compares them with its peers':
// numeric, IPv4-mapped IPv6 written as IPv4, so "10.0.0.2" from srun and a
// peer seen as "::ffff:10.0.0.2" are one source.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dp::daemon {

// The numeric form of an address; empty when `text` is not numeric.
std::string canonical_address(std::string_view text);
// Words separated by spaces or commas. Numeric ones are kept; names
// (NodeAddr may be a host name) are resolved, at most `max_lookups` of them,
// since each lookup may wait on DNS before the daemon answers READY.
std::vector<std::string> step_node_addresses(std::string_view list, int max_lookups = 64);
// The peer address of a connected socket, in the same form; empty if unknown.
std::string peer_address(int fd);

}  // namespace dp::daemon
