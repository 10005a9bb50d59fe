// The socket side of dp-nodeagent: one libevent loop with the daemon's TCP
// connection, the node's abstract unix listener, the control pipe from
// slurmstepd (stdin) and a tick. Every decision is the AgentCore's.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent_core.hpp"
#include "daemon_hello.hpp"
#include "daemon_relink.hpp"
#include "flight_reader.hpp"
#include "frame_codec.hpp"
#include "frame_conn.hpp"
#include "handles.hpp"
#include "keeper_contract.hpp"
#include "launch_contract.hpp"
#include "launcher_workers.hpp"
#include "listener.hpp"
#include "local_tasks.hpp"
#include "port_holds.hpp"
#include "rank_sampler.hpp"
#include "reply_reader.hpp"
#include "stacks_reader.hpp"
#include "step_signals.hpp"
#include "store_front.hpp"

namespace dp::agent {

class AgentServer final : public AgentOutbox, public StoreOutbox {
 public:
  // daemon: the connection whose hello went through; listen_fd: the node's
  // listener, known to the ranks as `socket` ("@name").
  // signals: the step's signals as they arrive (main installs it first).
  // store_fd: the TCP listener of the step's PyTorch store (--dp-store=step;
  // store_listen.hpp), or none. holds: the step's ports held until its
  // program listens on them (rank 0's node). keeper_fd: the task keepers'
  // listener (settings keepers=keep: the socket's name + kKeeperSuffix), or none.
  static Result<std::unique_ptr<AgentServer>> create(
      const AgentSettings& s, DaemonLink daemon, service::UniqueFd listen_fd, std::string socket,
      service::StepSignalPipe signals, service::UniqueFd store_fd = {}, PortHolds holds = {},
      FlightPlaces flight = {}, service::UniqueFd keeper_fd = {});
  ~AgentServer() override;
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // Until the control pipe closes (the step ended), the daemon is gone, or a
  // signal. Returns the exit status.
  int run();

  void to_rank(ConnId conn, const proto::Response& r) override;
  void close_rank(ConnId conn) override;
  void to_daemon(const proto::Request& r) override;
  void end_tasks(const std::string& why, const std::set<int>& told) override;
  void relink(Clock::time_point deadline) override;
  void to_client(ConnId conn, std::string_view bytes) override;
  void close_client(ConnId conn, const std::string& why) override;
  void send_soon() override;
  void read_stacks(uint64_t ask, std::chrono::milliseconds deadline, bool flight) override;
  void sample_ranks(std::chrono::milliseconds every) override;
  void add_samples(proto::Heartbeat& hb) override;
  void restart(const proto::Restart& r) override;
  void fence_programs(const std::string& why) override;

 private:
  using Conn = service::FrameConn<AgentServer>;
  // Replies held for a peer that never reads (a rank, a store client): past
  // this, its connection is shut down and it counts as gone.
  static constexpr size_t kMaxOutBytes = 64u << 20;
  // A PyTorch store client: bytes, not frames (agent_store_io.cpp).
  struct StoreConn : service::ConnBase<AgentServer> {
    std::string out;
    size_t out_pos = 0;
    bool closing = false;
  };

  // A task's keeper (agent_keepers.cpp): lines, not frames.
  struct KeeperConn : service::ConnBase<AgentServer> {
    std::string in;
    pid_t pid = 0;              // SO_PEERCRED's
    int local = -1;             // its task's local index, once it said so
    bool running = false;       // its program runs
    bool exit_told = false;     // its program's end went to the core
    bool stop_pending = false;  // told to stop; not yet stopped
    bool started = false;       // its program started since the last START
  };

  AgentServer(const AgentSettings& s, std::string socket);
  Result<void> start_events(service::UniqueFd listen_fd);
  static void on_daemon_read(evutil_socket_t, short, void* arg);
  static void on_daemon_write(evutil_socket_t, short, void* arg);
  static void on_control(evutil_socket_t, short, void* arg);
  static void on_tick(evutil_socket_t, short, void* arg);
  static void on_worker_end(evutil_socket_t, short, void* arg);
  static void on_signal(evutil_socket_t, short, void* arg);
  static void on_store_due(evutil_socket_t, short, void* arg);
  static void on_stacks_read(evutil_socket_t, short, void* arg);

  void admit(service::UniqueFd fd);
  // agent_keepers.cpp
  void admit_keeper(service::UniqueFd fd);
  void read_keeper(KeeperConn& k);
  bool identify_keeper(KeeperConn& k, const KeeperLine& l);
  void keeper_line(KeeperConn& k, const KeeperLine& l);
  void send_keeper(KeeperConn& k, const KeeperLine& l);
  void tell_keeper(KeeperConn& k, const proto::Restart& r);
  int keeper_rank(int local) const;
  void check_restart_ready();
  void check_fenced();
  void keeper_task_started(const TaskStart& t);
  void keeper_task_exited(int task_id, int wait_status);
  void keeper_gone(uint64_t id, const std::string& why);
  void release_idle_keepers();
  void read_rank(Conn& c);
  bool flush(int fd, std::string& out, size_t& pos, event* wr);
  void flush_rank(Conn& c);
  void drop(ConnId id);
  void read_daemon();
  // A failed read or write on the daemon's connection (err: errno; 0: EOF).
  void daemon_failed(int err, const std::string& what);
  void set_daemon_events();
  void adopt_link(Result<DaemonLink> link);
  // agent_store_io.cpp
  void admit_store(service::UniqueFd fd);
  void read_store(StoreConn& c);
  void flush_store(StoreConn& c);
  void read_control();
  void tick();
  void worker_ended();
  // The step signals received so far, to the core: before any task exit or
  // dropped rank is handled, so a task ended by the signal is named as such.
  void drain_signals();
  void answer_root();
  void answer(const Result<AgentAnswer>& a);
  void stop(int status, const std::string& why);
  // The daemon is gone: stop at once, or once the node's ended tasks are gone.
  void finish();

  AgentSettings settings_;
  std::string socket_;
  AgentCore core_;
  LocalTasks tasks_;
  LauncherWorkers workers_;
  Clock::time_point next_scan_{};
  PortHolds holds_;
  FlightPlaces flight_;  // the NCCL ranks' dump folder and RAS port (flight_reader.hpp)
  service::StepSignalPipe signals_;
  // Its thread touches nothing of the loop's; destroying it joins the thread.
  DaemonRelink relink_;
  // First: every member below that holds events of it goes before it.
  service::EventBasePtr base_;
  service::UniqueFd daemon_fd_;
  service::EventPtr daemon_rd_, daemon_wr_, control_ev_, tick_ev_, workers_ev_, signal_ev_;
  // dp-top --stacks: its reads run on the reader's thread; stacks_ev_ watches its fd.
  StacksReader stacks_;
  service::EventPtr stacks_ev_;
  RankSampler sampler_;  // the straggler watch's looks, on its own thread
  service::Listener listener_;
  rdv::ReplyReader daemon_reader_;
  std::string daemon_out_;
  size_t daemon_out_pos_ = 0;
  std::string control_buf_;
  std::unordered_map<ConnId, std::unique_ptr<Conn>> conns_;
  StoreFront store_;
  service::Listener store_listener_;
  std::unordered_map<ConnId, std::unique_ptr<StoreConn>> store_conns_;
  // Activated when the front has reads due: runs after the pass's other
  // events, so the node's clients' reads of one pass leave as one request.
  service::EventPtr store_due_ev_;
  bool hold_daemon_writes_ = false;  // to_daemon queues; the caller flushes once
  int store_port_ = 0;               // 0: no store served
  uint64_t store_refusals_ = 0;      // store clients closed for a refused request
  // The task keepers (settings keepers=keep) and the restart they carry out.
  service::Listener keeper_listener_;
  std::unordered_map<uint64_t, std::unique_ptr<KeeperConn>> keepers_;
  std::map<int, TaskStart> keeper_tasks_;  // root's: each keeper's pid, by local index
  std::optional<proto::Restart> restart_;  // the daemon's latest order
  bool restart_told_ = false;              // its answer went to the daemon
  bool released_ = false;                  // DONE: every keeper ends
  bool fencing_ = false;                   // fence_programs: "stopped" from every keeper due
  ConnId next_id_ = 1;
  bool answered_ = false;
  bool step_ended_ = false;  // root said "step end" before closing the control pipe
  Clock::time_point answer_by_;
  int status_ = 0;
};

}  // namespace dp::agent
