// The daemon's read-only door for its own user: a unix socket in
// the user's 0700 folder (dp::obs::user_dir) that answers one stats request
// per connection with the step report, for dp-top and srun's closing lines.
// Peers of another uid (root aside) are closed at once. It never changes the
// step and never blocks the loop for long: small frames, short deadlines.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "frame_codec.hpp"
#include "handles.hpp"
#include "listener.hpp"

namespace dp::daemon {

class ReportSocket {
 public:
  using Answer = std::function<proto::Stats()>;
  static Result<std::unique_ptr<ReportSocket>> create(event_base* base, std::string path,
                                                      Answer answer);
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
  };
  ReportSocket() = default;
  static void on_read(evutil_socket_t fd, short what, void* arg);
  void admit(service::UniqueFd fd);
  void serve(Conn& c);
  void drop(int fd);

  event_base* base_ = nullptr;
  std::string path_;
  Answer answer_;
  service::Listener listener_;
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
};

}  // namespace dp::daemon
