// Work that slurmstepd's root context must not do itself (anything that
// touches the network or trusts what the user's environment names) runs in
// a child that has become the job's user first. Root only reads the child's
// short answer from a pipe, bounded in size and time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
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

// Forks; the child drops every supplementary group, sets gid then uid
// (checked: real, effective and saved ids all the job's, root not regained),
// becomes non-dumpable, closes every inherited descriptor but its pipe, runs
// `work` and _exits. The parent returns the child's value or error, or an
// error when the child answers more than kMaxChildAnswer bytes, dies, or
// is still running at `deadline` (then it is killed by its pid). The
// child's text is not sanitised here: see sanitize().
Result<std::string> run_as_user(const UserIds& ids, std::chrono::milliseconds deadline,
                                const std::function<Result<std::string>()>& work);

// In a forked child of root: drops every supplementary group, sets gid
// then uid, and checks that real, effective and saved ids are all the
// job's and root cannot be regained. False: the child must not go on.
bool become_user(const UserIds& ids);

// Reads fd to its EOF, as root reads a less trusted child's answer: at most
// kMaxChildAnswer bytes, until `deadline`; `who` names the child in errors.
Result<std::string> read_answer(int fd, std::chrono::steady_clock::time_point deadline,
                                std::chrono::milliseconds allowed, const std::string& who);

// Text from a less trusted process, made fit for Slurm's log and the
// user's terminal: printable ASCII (others become '?'), at most `max`
// characters ("..." marks a cut).
std::string sanitize(std::string_view text, size_t max = 512);

}  // namespace dp::spank
