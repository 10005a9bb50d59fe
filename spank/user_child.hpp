// Work that slurmstepd's root context must not do itself (anything that
// touches the network or trusts what the user's environment names) runs in
// a child that has become the job's user first (the node agent, see
// agent_launcher). Root only reads the child's short answer from a pipe,
// bounded in size and time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "dp/result.hpp"

namespace dp::spank {

// The most root reads from a child; a real answer is a few bytes.
inline constexpr size_t kMaxChildAnswer = 64 * 1024;

struct UserIds {
  uid_t uid = 0;
  gid_t gid = 0;
};

// In a forked child of root: drops every supplementary group, sets gid
// then uid, and checks that real, effective and saved ids are all the
// job's and root cannot be regained. False: the child must not go on.
bool become_user(const UserIds& ids);

// Reads fd to its EOF, as root reads a less trusted child's answer: at most
// kMaxChildAnswer bytes, until `deadline`; `who` names the child in errors.
Result<std::string> read_answer(int fd, std::chrono::steady_clock::time_point deadline,
                                std::chrono::milliseconds allowed, const std::string& who);

}  // namespace dp::spank
