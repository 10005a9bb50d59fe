// The straggler watch (issue 55): every node agent is asked once to look at
// its ranks (SampleAsk, after its hello); the counts come with its
// heartbeats (broker_nodes.cpp), libdp's counters with its ranks'
// (StepReport::on_progress), where the others wait and the NCCL ranks'
// flight-recorder dumps from the stacks rounds (broker_stacks.cpp). At each block's end the report
// judges them; the verdict the user reads goes to srun's stderr.
#include <cstdio>

#include "broker.hpp"

namespace dp::daemon {

void Broker::ask_samples(ConnId conn) {
  if (!report_.stragglers()) return;
  proto::Response push;  // id 0: a push
  push.mutable_sample_ask()->set_every_ms(
      static_cast<uint32_t>(StragglerReport::kLookEvery.count()));
  out_.send(conn, push);
}

void Broker::watch_stragglers(Clock::time_point now) {
  StragglerReport* s = report_.stragglers();
  if (!s) return;
  const std::optional<double> seconds = watch_.block_end(now);
  if (!seconds) return;
  for (const auto& said :
       s->end_block(report_.step_seconds(now), *seconds, report_.counts_collectives())) {
    if (!said.heard) continue;
    // The flight recorders' verdict says so: it is the one a GPU's work cannot fake.
    const std::string line =
        said.verdict.line +
        (said.source == StragglerReport::Source::flight ? " (flight recorder)" : "");
    out_.notice("slurm-dp: step " + cfg_.job_id + "." + cfg_.step_id + ": straggler: " + line);
    std::fprintf(stderr, "dp-rendezvousd: job %s step %s: straggler: %s\n", cfg_.job_id.c_str(),
                 cfg_.step_id.c_str(), line.c_str());
  }
}

}  // namespace dp::daemon
