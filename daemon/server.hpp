// The socket side of dp-rendezvousd: one libevent loop, a non-blocking
// listener, and per connection a frame decoder and an output buffer. Every
// decision about requests is the Broker's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "broker.hpp"
#include "frame_codec.hpp"
#include "frame_conn.hpp"
#include "handles.hpp"
#include "listener.hpp"
#include "options.hpp"
#include "report_socket.hpp"

namespace dp::daemon {

class Server final : public Outbox {
 public:
  // Raises the soft fd limit to the hard one, checks that it holds the step,
  // binds port 0 on opts.listen_addr and listens with backlog SOMAXCONN.
  static Result<std::unique_ptr<Server>> create(const DaemonOptions& opts, std::string secret);
  ~Server() override;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const { return port_; }
  // "@name" of the abstract report socket srun asks at the step's end; empty: none.
  std::string report_socket_name() const {
    return abstract_report_socket_ ? abstract_report_socket_->path() : std::string();
  }
  // Runs until SIGTERM/SIGINT or the parent's (srun's) death.
  void run();

  void send(ConnId conn, const proto::Response& r) override;
  void close(ConnId conn) override;
  void end_step_in_slurm(const AbortCause& cause) override;
  void notice(const std::string& line) override;

 private:
  struct Conn : service::FrameConn<Server> {
    bool flush_queued = false;
    bool overflowed = false;  // never reads its replies; dropped from on_flush
    Clock::time_point closing_since;
    Clock::time_point last_out{};  // the last frame queued to it
  };

  Server(const DaemonOptions& opts, std::string secret);
  Result<void> start_events();
  void open_report_sockets();
  static void on_tick(evutil_socket_t fd, short what, void* arg);
  static void on_signal(evutil_socket_t fd, short what, void* arg);
  static void on_reap(evutil_socket_t fd, short what, void* arg);
  static void on_flush(evutil_socket_t fd, short what, void* arg);

  void admit(service::UniqueFd fd);
  void read_from(Conn& c);
  void flush(Conn& c);
  void drop(Conn& c);  // destroy later, outside any callback of c
  void tick();
  void stop(const char* why);

  DaemonOptions opts_;
  // First: every member below that holds events of it goes before it.
  service::EventBasePtr base_;
  uint16_t port_ = 0;
  service::Listener listener_;
  service::EventPtr tick_ev_, sigterm_ev_, reap_ev_;
  service::EventPtr flush_ev_;  // replies of one loop pass leave in one send per connection
  std::vector<ConnId> flush_queue_;
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<ReportSocket> report_socket_;           // dp-top's and srun's read-only view
  std::unique_ptr<ReportSocket> abstract_report_socket_;  // the same, not blockable by others
  std::unordered_map<ConnId, std::unique_ptr<Conn>> conns_;
  std::vector<std::unique_ptr<Conn>> dead_;
  ConnId next_id_ = 1;
  pid_t parent_ = 0;
};

}  // namespace dp::daemon
