// The step report file srun writes for its user (--dp-report, site report=).
// It may live in a folder other users can write (a shared scratch), so a file
// there that is not the user's own is never written into: a link, another
// user's file, or one with a second name (a hard link) is refused, naming
// its owner. New reports are 0600.
#pragma once

#include <string>

#include "dp/result.hpp"

namespace dp::spank {

// %j: job id, %s: step id, %u: the user's name, %%: a percent sign.
std::string expand_report_path(const std::string& pattern, const std::string& job,
                               const std::string& step, const std::string& user);

// Writes text to path as the calling user (srun), checked as above.
Result<void> write_report_file(const std::string& path, const std::string& text);

// The calling user's name (%u), or the uid's digits when it has none.
std::string current_user_name();

}  // namespace dp::spank
