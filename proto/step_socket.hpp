// Shared by dp-rendezvousd, srun's plugin and dp-top.
// Where a running step's daemon answers its user's read-only questions (the
// step report for dp-top and srun's closing lines): a unix socket
// in /tmp/slurm-dp-<uid>, a folder only that user may enter (0700, checked,
// never followed through a link). The daemon also checks the peer's uid, so
// no token is needed and another user's step cannot be read.
#pragma once

#include <chrono>
#include <string>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"

namespace dp::obs {

// The user's folder; with create, made 0700 if absent. Refused when it is a
// link, not a folder, owned by someone else, or open to others.
Result<std::string> user_dir(bool create);
// "<job>.<step>.<tag>.sock"; tag tells clusters apart (a hash of SLURM_CONF,
// or of Slurm's default configuration path when it is unset).
std::string socket_name(const std::string& job, const std::string& step);
Result<std::string> socket_path(const std::string& job, const std::string& step, bool create);

// One stats request over the socket, its answer (with report_json).
Result<proto::Stats> query(const std::string& path, std::chrono::milliseconds timeout);

}  // namespace dp::obs
