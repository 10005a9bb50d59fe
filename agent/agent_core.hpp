// The node agent's logic: one per step per node, speaking for the
// node's ranks to the step's daemon over a single ROLE_NODE connection. Pure,
// like daemon/broker: no sockets; the I/O layer feeds it frames, disconnects,
// slurmstepd's task exits and ticks, and it answers through AgentOutbox.
// The unit tests and the fuzzer drive it directly.
//
// Files: agent_link.cpp (the daemon link), agent_locals.cpp (local hellos,
// dispatch, task exits), agent_core.cpp (deadlines, heartbeats, silence),
// agent_store.cpp (forwarding; the gets and barriers folded by NodeFolds,
// node_folds.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dp/master_port.hpp"
#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "dp/silence_watch.hpp"
#include "dp/site_config.hpp"
#include "dp/step_signals.hpp"
#include "frame_limits.hpp"
#include "node_folds.hpp"

namespace dp::agent {

using Clock = std::chrono::steady_clock;
using ConnId = uint64_t;

struct AgentConfig {
  std::string secret;       // hex, as the tasks get it; never logged
  std::string host;         // this node, as the daemon's messages name it
  std::string daemon_addr;  // host:port, for messages
  int world_size = 0;
  std::vector<int32_t> node_ranks;  // this node's global ranks, ascending (a spare's: none)
  int node = -1;                    // this node's index in the step (SLURM_NODEID)
  std::chrono::milliseconds heartbeat_every{1'000};
  std::chrono::milliseconds ping_every{1'000};  // clients watch a silent agent (DP_RDV_SILENCE_MS)
  // Nothing from the daemon this long (of the agent's own running time): it
  // is gone. The site's heartbeat_timeout (launch contract); 0: no bound.
  std::chrono::milliseconds daemon_silence{
      std::chrono::seconds(site_defaults().heartbeat_timeout_s)};
  // A step with spares: nothing from the daemon this long (the agent's own
  // stop forgiven), or the daemon's FENCE, or its loss: the node's programs
  // are killed, whole trees, no grace (fence_programs). 0: never.
  std::chrono::milliseconds fence_after{0};
  // The daemon pings after 1.3 s without a frame: this long without one (or a socket
  // error that is no peer's answer) puts the link in doubt, and a new
  // connection says hello again (at most half the bound).
  std::chrono::milliseconds doubt_after{3'000};
  std::chrono::milliseconds hello_timeout{5'000};
  // A rank's connection dropped: slurmstepd's exit status usually follows
  // within milliseconds, and makes the first failure say how the rank died.
  std::chrono::milliseconds exit_status_grace{250};
  // keep: a failed step's survivors run on (the agent never ends them).
  OnFailure on_failure = OnFailure::end;
  size_t max_cache_bytes = 64u << 20;
  uint32_t max_frame_bytes = rdv::kMaxFrameBytes;   // after hello
  std::function<Result<std::string>()> make_nonce;  // tests and the fuzzer pin it
};

class AgentOutbox {
 public:
  virtual ~AgentOutbox() = default;
  virtual void to_rank(ConnId conn, const proto::Response& r) = 0;
  // Flush, then close; the core has already forgotten conn.
  virtual void close_rank(ConnId conn) = 0;
  virtual void to_daemon(const proto::Request& r) = 0;
  // The node's place may be another's now (the daemon unheard for
  // fence_after, its FENCE, its loss): kill its programs now, whole process
  // trees, no grace. At most once.
  virtual void fence_programs(const std::string& why) { (void)why; }
  // The step failed (the daemon's abort, or the daemon lost): end the node's
  // remaining tasks. `told`: ranks that heard the verdict through libdp (their
  // polite signal; they fail on their own with its text). Called at most once
  // per verdict the core hears.
  virtual void end_tasks(const std::string& why, const std::set<int>& told) {
    (void)why;
    (void)told;
  }
  // The link is in doubt: open a new connection to the daemon and say the
  // node's hello again, trying until `deadline`; the outcome goes to
  // relinked() or relink_failed(). The old connection stays read until then.
  virtual void relink(Clock::time_point deadline) { (void)deadline; }
  // The daemon asks for the node's ranks' stacks (dp-top --stacks, the hang
  // watch), or the step failed (ask rdv::kStacksAtFailure): read them off the
  // loop and send a StacksAnswer with this ask within `deadline`, then tell
  // the core (AgentCore::stacks_sent). flight: also each NCCL rank's flight
  // recorder (flight_reader.hpp).
  virtual void read_stacks(uint64_t ask, std::chrono::milliseconds deadline, bool flight) {
    (void)ask;
    (void)deadline;
    (void)flight;
  }
  // The step's straggler watch is on (SampleAsk): look at the node's ranks
  // every `every` off the loop (rank_sampler.hpp), and put their counts so
  // far into each heartbeat (add_samples).
  virtual void sample_ranks(std::chrono::milliseconds every) { (void)every; }
  virtual void add_samples(proto::Heartbeat& hb) { (void)hb; }
  // The step restarts in place (the daemon's STOP, START, DONE): the node's
  // task keepers stop, start or release their programs; the answer to STOP
  // and START goes back through AgentCore::restart_ready.
  virtual void restart(const proto::Restart& r) { (void)r; }
};

// Another part of the agent that sends requests over the node's one daemon
// connection (the store front, store_front.hpp): their answers come back here.
class UpstreamSink {
 public:
  virtual ~UpstreamSink() = default;
  // The daemon's answer to the request send_for() gave this id.
  virtual void on_upstream(uint64_t id, const proto::Response& r) = 0;
};

class AgentCore {
 public:
  AgentCore(AgentConfig cfg, AgentOutbox& out, Clock::time_point now);

  // The daemon link: a TCP connection is open; its challenge comes as a response.
  void on_daemon_response(const proto::Response& r, Clock::time_point now);
  // The hello already went through on the first connection (daemon_hello.hpp):
  // its reply, as if it came on this link.
  void hello_answered(const proto::Response& reply, Clock::time_point now);
  // EOF, a reset, a bad frame: the step's daemon is gone for this node
  // (while relinking, the old connection's end is no news: the daemon closes
  // it when the new one takes over).
  void on_daemon_lost(const std::string& why);
  // A socket error no peer answered (a timeout, an unreachable network): the
  // link is in doubt, not lost; the agent reconnects within the bound.
  void on_daemon_doubt(const std::string& why, Clock::time_point now);
  // The new connection's hello reply (relink()): OK, and the requests the
  // old one left unanswered go again; a refusal (the step failed meanwhile)
  // ends the node with the daemon's verdict.
  void relinked(const proto::Response& reply, Clock::time_point now);
  // No new connection before the deadline.
  void relink_failed(const std::string& why, Clock::time_point now);
  bool daemon_ready() const { return link_ == Link::ready; }
  bool relinking() const { return link_ == Link::relinking; }
  // Why the link was last put in doubt (for the agent's log).
  const std::string& doubt() const { return doubt_; }
  int relinks() const { return relinks_; }
  // The master-port exchange: the master node publishes its port or its
  // failure, write-once; a failure also aborts the step with it, so that it
  // is the step's first failure rather than the task exits that follow. The
  // others fetch it. Its outcome, once known: the master node's port or
  // failure (also when the daemon refused this node for the master's
  // abort), or why the exchange failed.
  void publish_step_ports(const StepPortsValue& v);
  void fetch_step_ports(std::chrono::milliseconds timeout);
  const std::optional<Result<StepPortsValue>>& step_ports() const { return step_ports_; }

  // Another user's connection to the node's PyTorch store was closed unread;
  // the count goes to the daemon with each heartbeat (the step report,
  // dp-top). Returns the count so far.
  uint64_t note_store_stranger() { return ++store_strangers_; }
  // The node's store refused one of its own clients' requests and closed
  // that client (line: whose request and why): the daemon counts it and
  // keeps the first lines for the step's end. Returns the count so far.
  uint64_t note_store_refusal(const std::string& line);

  void on_rank_connect(ConnId conn, Clock::time_point now);
  void on_rank_frame(ConnId conn, std::string_view payload, Clock::time_point now);
  // A frame over the limit; head: its first bytes. A ready rank's request is
  // refused (LIMIT, under its id) and true returned: the caller skips the
  // frame and the rank stays. Before hello the connection is closed (false).
  bool on_rank_oversized(ConnId conn, uint32_t announced, std::string_view head = {});
  void on_rank_disconnect(ConnId conn, Clock::time_point now);
  // slurmstepd saw a task of this node end (wait status as waitpid gives it).
  void on_task_exit(int rank, int wait_status, Clock::time_point now);
  // A step that restarts in place: the task holding `rank` ended for good (its
  // keeper, which Slurm never starts again), so the node cannot hold its ranks.
  void on_task_gone(int rank, const std::string& detail, Clock::time_point now);
  // A worker of the launcher task `rank` (launcher_workers.hpp) ended before
  // the launcher: a non-zero exit or a signal is the node's failure, named
  // with the worker's own rank, ahead of the launcher's exit.
  void on_worker_exit(int rank, int worker_rank, int wait_status, Clock::time_point now);
  // Slurm delivered a step signal (dp/step_signals.hpp) to this node: the
  // daemon hears of it, and a task ending by it is reported as the user's.
  void on_step_signal(int sig, Clock::time_point now);
  // Deadlines, heartbeats, pings, silence. Call a few times a second.
  void on_tick(Clock::time_point now);
  // The answer to read_stacks(ask) went to the daemon. After the step failed
  // (kStacksAtFailure), the node's tasks are ended only then: the report
  // keeps where the survivors were (or at kAtFailureWait, whichever first).
  void stacks_sent(uint64_t ask);
  // The survivors' read at a failure: what it may take, and the bound on the
  // tasks' end it may add (from the first tick after the abort).
  static constexpr std::chrono::milliseconds kAtFailureRead{500};
  static constexpr std::chrono::milliseconds kAtFailureWait{1'000};

  // A request of `sink`'s own over the daemon link (queued until it is
  // ready); its answer goes to sink.on_upstream. After a new connection it
  // goes again when `resend` (applying it twice changes nothing), else sink
  // hears that its outcome is unknown. The request id it was given.
  uint64_t send_for(UpstreamSink& sink, proto::Request req, bool resend);
  // The blocking call `id` of send_for is no longer wanted: the daemon drops
  // it and its answer, if one is already on its way, is not delivered.
  void cancel_for(uint64_t id);

  // The node's programs stopped (STOP) or started again (START) for the
  // daemon's restart `generation`.
  void restart_ready(uint64_t generation, proto::Restart::Phase phase);
  // fence_programs finished: nothing of the node's programs is left. The
  // daemon's FENCE hears it (its spare may start).
  void fenced();
  // Between the daemon's STOP and START: a program that ends is no loss.
  bool restarting() const { return restarting_; }
  // The ranks this node holds now (a spare's change when it takes a place).
  const std::vector<int32_t>& node_ranks() const { return cfg_.node_ranks; }
  // The daemon's abort came: the node's part of the step is over.
  bool aborted() const { return abort_.has_value(); }

  uint32_t max_frame_bytes(ConnId conn) const;
  bool knows(ConnId conn) const { return locals_.count(conn) != 0; }
  // The daemon is gone: the local ranks were told; the agent exits.
  bool finished() const { return link_ == Link::gone; }
  const std::string& end_reason() const { return end_reason_; }
  size_t cached_keys() const { return folds_.cached_keys(); }

 private:
  enum class Link : uint8_t { awaiting_challenge, awaiting_hello_reply, ready, relinking, gone };
  struct Local {
    bool ready = false;
    int rank = -1;
    std::string nonce;
    Clock::time_point since;
  };
  struct RankState {
    ConnId conn = 0;
    bool goodbye = false;
    bool lost = false;  // RankLost sent
    std::optional<int> wait_status;
    std::optional<Clock::time_point> dropped_at;  // waiting for its exit status
  };
  enum class Kind : uint8_t { plain, get, barrier, set_once, exchange, sink };
  struct Upstream {  // what an upstream request id stands for
    Kind kind = Kind::plain;
    ConnId conn = 0;
    uint64_t local_id = 0;
    std::string key;        // get, barrier: the name; set_once: the key
    std::string value;      // set_once: cached when the daemon agrees; exchange: what was published
    proto::Request sent{};  // as sent, for a new connection after an outage
    UpstreamSink* sink = nullptr;  // Kind::sink: who is answered
    bool resend = false;           // Kind::sink: may go again on a new connection
  };
  // agent_link.cpp, agent_locals.cpp, agent_core.cpp
  void handle_hello(ConnId conn, Local& l, const proto::Request& req);
  Result<void> check_hello(const Local& l, const proto::Hello& h) const;
  void dispatch(ConnId conn, int rank, const proto::Request& req, Clock::time_point now);
  void reject(ConnId conn, uint64_t id, proto::Code code, const std::string& why);
  void reply(ConnId conn, uint64_t id, proto::Code code, const std::string& why = {});
  void link_response(const proto::Response& r);
  void send_hello(const proto::Response& challenge);
  void daemon_push(const proto::Response& r);
  void on_restart(const proto::Restart& r);
  void step_ports_answered(const Upstream& u, const proto::Response& r);
  void report_lost(int rank, RankState& s, Clock::time_point now, const std::string& detail,
                   std::optional<int> worker_rank = {}, std::optional<int> worker_status = {},
                   bool task_gone = false);
  std::optional<ReceivedSignal> received_signal(Clock::time_point now) const;
  void beat(Clock::time_point now);
  // A request the daemon answers nothing (id 0): sent now, or once the link is up.
  void notify(proto::Request req);
  void end_tasks(const std::string& why);
  std::set<int> told_ranks() const;  // the ready local ranks: they heard the verdict
  void end_pending();                // the abort's end of the tasks, once (pending_end_)
  void watch_daemon(Clock::time_point now);
  std::string silence_text(Clock::time_point now) const;
  void resend_pending(const std::set<uint64_t>& queued);
  void expire_hellos(Clock::time_point now);
  uint64_t upstream(proto::Request req, Upstream what);
  // agent_store.cpp
  void forward(ConnId conn, int rank, const proto::Request& req);
  void local_get(ConnId conn, const proto::Request& req, Clock::time_point now);
  void local_barrier(ConnId conn, int rank, const proto::Request& req, Clock::time_point now);
  void answered(const Upstream& u, const proto::Response& r);
  void answer_waiters(const std::vector<NodeFolds::Waiter>& waiters, proto::Response r);
  void expire_waiters(Clock::time_point now);

  AgentConfig cfg_;
  AgentOutbox& out_;
  Link link_ = Link::awaiting_challenge;
  int relinks_ = 0;
  std::string doubt_;
  std::string end_reason_;
  std::optional<proto::Response> abort_;  // the daemon's abort, for late arrivals
  struct PendingEnd {                     // the abort's end of the tasks, after the survivors' read
    std::string why;
    std::set<int> told;                         // as end_tasks gives them, at the abort
    std::optional<Clock::time_point> deadline;  // set at the first tick
  };
  std::optional<PendingEnd> pending_end_;
  std::optional<Result<StepPortsValue>> step_ports_;
  std::vector<proto::Request> queued_;  // requests made before the link was ready

  std::unordered_map<ConnId, Local> locals_;
  std::map<int32_t, RankState> ranks_;                       // exactly the node's ranks
  std::map<int32_t, std::optional<proto::Progress>> heard_;  // since the last heartbeat

  uint64_t next_up_ = 2;  // 1: the hello
  std::unordered_map<uint64_t, Upstream> pending_;
  NodeFolds folds_;  // the node's gets and barriers folded, write-once keys cached

  SilenceWatch daemon_;  // the step's daemon, heard or silent
  uint64_t store_strangers_ = 0;
  uint64_t store_refused_ = 0;
  Clock::time_point next_beat_, next_ping_;
  std::optional<std::pair<int, Clock::time_point>> signal_;  // the last step signal, when
  bool restarting_ = false;
  // The latest STOP or START (generation, phase): the daemon repeats it on
  // a new link, and a repeat is answered, not done again.
  std::pair<uint64_t, int> last_restart_{0, -1};
  // The node's programs were killed (fence_programs), and why; a FENCE's
  // generation, answered once they are.
  std::optional<std::string> fenced_;
  std::optional<uint64_t> fence_answer_due_;
  void fence(const std::string& why);
};

}  // namespace dp::agent
