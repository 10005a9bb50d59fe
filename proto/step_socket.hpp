// Shared by dp-rendezvousd, srun's plugin and dp-top.
// Where a running step's daemon answers its user's read-only questions (the
// step report for dp-top and srun's closing lines): a unix socket
// in /tmp/slurm-dp-<uid>, a folder only that user may enter (0700, checked,
// never followed through a link). The daemon also checks the peer's uid, so
// no token is needed and another user's step cannot be read; it admits root
// too, whose dp-top asks a user's step for admins (read-only: the stats and
// stacks requests), through the user's abstract sockets, and only a daemon of
// that user's uid (`owner`; every other caller's is its own).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"

namespace dp::obs {

// The user's folder: $XDG_RUNTIME_DIR/slurm-dp when that is the user's own,
// else /tmp/slurm-dp-<uid>; with create, made 0700 if absent. Refused when
// it is a link, not a folder, owned by someone else (named, with who must
// act), or open to others. Since another user can take /tmp/slurm-dp-<uid>
// first, the daemon also answers on an abstract socket (step_socket_find.cpp).
Result<std::string> user_dir(bool create);
// "<job>.<step>.<tag>.sock"; tag tells clusters apart (a hash of SLURM_CONF,
// or of Slurm's default configuration path when it is unset).
std::string socket_name(const std::string& job, const std::string& step);
Result<std::string> socket_path(const std::string& job, const std::string& step, bool create);

// One stats request over the socket (a path, or "@name" abstract), its
// answer (with report_json); refused unless the server runs as `owner`.
Result<proto::Stats> query(const std::string& path, std::chrono::milliseconds timeout);
// The request query and query_step send.
proto::Request stats_request();
// Any one request (stats, stacks) the same way: its answer, or its error.
Result<proto::Response> ask(const std::string& path, const proto::Request& req,
                            std::chrono::milliseconds timeout, uid_t owner = ::getuid());

// The abstract name the daemon also listens on: "@slurm-dp-<uid>/" +
// socket_name + "." + random hex, so another user can neither take it
// first nor guess it (clients find it in /proc/net/unix).
Result<std::string> abstract_socket_name(const std::string& job, const std::string& step);
// The step's sockets a client may ask, the folder's first (the caller's
// own steps only); each is checked by query. Abstract ones with the step's
// prefix may be another user's decoys.
std::vector<std::string> step_sockets(const std::string& job, const std::string& step,
                                      uid_t owner = ::getuid());
// Steps of job with an abstract socket of `owner`'s on this host.
std::vector<std::string> running_steps(const std::string& job, uid_t owner = ::getuid());
// The first of step_sockets that answers; when none does, why (the folder's
// trouble included, naming who must act).
Result<proto::Stats> query_step(const std::string& job, const std::string& step,
                                std::chrono::milliseconds timeout);
Result<proto::Response> ask_step(const std::string& job, const std::string& step,
                                 const proto::Request& req, std::chrono::milliseconds timeout,
                                 uid_t owner = ::getuid());

}  // namespace dp::obs
