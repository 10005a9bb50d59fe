// The daemon's read-only door for its own user: a unix socket in
// the user's 0700 folder (dp::obs::user_dir) that answers one request per
// connection: stats with the step report (dp-top, srun's closing lines), at
// once; stacks (dp-top --stacks) later, when the node agents have answered.
// Peers of another uid (root aside) are closed at once. It never changes the
// step and never blocks the loop for long: small frames, short deadlines.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "frame_codec.hpp"
#include "handles.hpp"
#include "listener.hpp"

namespace dp::daemon {

class ReportSocket {
 public:
  using Answer = std::function<proto::Stats()>;
  // Asks for the merged stacks; the lines come to the callback later (or at
  // once, when there is nobody to ask), or never: the connection then ends at
  // its own timeout.
  using StacksLines = std::function<void(std::vector<std::string>)>;
  using AskStacks = std::function<void(StacksLines)>;
  static Result<std::unique_ptr<ReportSocket>> create(event_base* base, std::string path,
                                                      Answer answer, AskStacks ask_stacks = {});
  ~ReportSocket();  // closes every connection and removes the path
  ReportSocket(const ReportSocket&) = delete;
  ReportSocket& operator=(const ReportSocket&) = delete;
  const std::string& path() const { return path_; }

 private:
  struct Conn {
    ReportSocket* owner = nullptr;
    service::UniqueFd fd;
    service::EventPtr ev;  // after fd: freed before it is closed
    rdv::FrameDecoder dec{4096};
    uint64_t serial = 0;  // tells a later connection on the same fd from this one
    bool asked = false;   // a request was read: only its answer is awaited
  };
  ReportSocket() = default;
  static void on_read(evutil_socket_t fd, short what, void* arg);
  void admit(service::UniqueFd fd);
  void serve(Conn& c);
  void drop(int fd);
  void reply(int fd, const proto::Response& r);
  void ask_stacks(Conn& c, uint64_t request_id);

  event_base* base_ = nullptr;
  std::string path_;
  Answer answer_;
  AskStacks ask_stacks_;
  uint64_t next_serial_ = 1;
  // Callbacks of asks still out hold it weakly: a socket gone meanwhile is not touched.
  std::shared_ptr<ReportSocket*> self_ = std::make_shared<ReportSocket*>(this);
  service::Listener listener_;
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
};

}  // namespace dp::daemon
