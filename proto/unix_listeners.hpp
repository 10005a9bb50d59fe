// Listening abstract unix sockets of this network namespace, with the uid
// that created each, from the kernel's sock_diag (what ss -xl reads). A
// step's report socket is found by its name's prefix, which anyone can copy;
// the owner's uid lets a client skip another user's decoys without ever
// connecting to them (a decoy with a full backlog would otherwise stall it).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "dp/result.hpp"

namespace dp::obs {

struct UnixListener {
  std::string name;          // "@..." for an abstract name
  std::optional<uid_t> uid;  // absent on kernels before 5.3 (no UNIX_DIAG_UID)
};

// Abstract listeners whose name starts with prefix ("@...") created by owner
// (or of unknown uid), at most limit of them, filtered before they are
// counted: decoys of another user never hide the owner's; an error when
// sock_diag cannot be asked (the caller falls back).
Result<std::vector<UnixListener>> abstract_listeners(const std::string& prefix, uid_t owner,
                                                     size_t limit);

}  // namespace dp::obs
