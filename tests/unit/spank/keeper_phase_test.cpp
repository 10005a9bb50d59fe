// The task keeper's rule (spank/keeper_phase.hpp): every phase against every
// event, with and without its agent.
#include "keeper_phase.hpp"

#include <gtest/gtest.h>

namespace dp::spank {
namespace {

using P = KeeperPhase;
using E = KeeperEvent;

struct Case {
  P from;
  E event;
  bool agent;
  P to;
  bool end;
};

TEST(KeeperPhase, EveryPhaseAndEvent) {
  const Case cases[] = {
      {P::idle, E::started, true, P::running, false},
      {P::running, E::program_ended, true, P::idle, false},  // between generations
      {P::running, E::program_ended, false, P::idle, true},  // no agent: nothing runs unseen
      {P::running, E::stop_ordered, true, P::stopping, false},
      {P::stopping, E::program_ended, true, P::stopping, false},  // its tree may live on
      {P::stopping, E::tree_gone, true, P::idle, false},
      {P::stopping, E::tree_gone, false, P::idle, true},
      {P::running, E::exit_ordered, true, P::ending, false},  // a goodbye before the end
      {P::ending, E::program_ended, true, P::ending, true},
      {P::ending, E::agent_lost, false, P::ending,
       false},  // the program told to exit is waited for
      {P::ending, E::stop_ordered, true, P::stopping_to_end, false},
      {P::stopping, E::exit_ordered, true, P::stopping_to_end, false},
      {P::stopping_to_end, E::program_ended, true, P::stopping_to_end, false},
      {P::stopping_to_end, E::agent_lost, false, P::stopping_to_end, false},
      {P::stopping_to_end, E::tree_gone, true, P::stopping_to_end, true},
      {P::idle, E::exit_ordered, true, P::idle, true},
      {P::idle, E::agent_lost, false, P::idle, true},
      {P::running, E::agent_lost, false, P::running, true},  // lost: the program is killed
      {P::stopping, E::agent_lost, false, P::stopping, true},
      {P::idle, E::tree_gone, true, P::idle, false},
  };
  for (const Case& c : cases) {
    const KeeperStep s = keeper_step(c.from, c.event, c.agent);
    EXPECT_EQ(s.phase, c.to) << static_cast<int>(c.from) << " + " << static_cast<int>(c.event);
    EXPECT_EQ(s.end_keeper, c.end)
        << static_cast<int>(c.from) << " + " << static_cast<int>(c.event);
  }
}

// Whatever comes, a keeper whose agent is gone never stays in a phase that
// waits for nothing: it ends, or it waits for a program told to exit.
TEST(KeeperPhase, WithoutItsAgentAKeeperEndsOrWaitsForAnExit) {
  for (P p : {P::idle, P::running, P::stopping, P::ending, P::stopping_to_end}) {
    const KeeperStep s = keeper_step(p, E::agent_lost, false);
    EXPECT_TRUE(s.end_keeper || s.phase == P::ending || s.phase == P::stopping_to_end)
        << static_cast<int>(p);
  }
}

}  // namespace
}  // namespace dp::spank
