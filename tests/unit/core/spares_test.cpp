#include "dp/spares.hpp"

#include <gtest/gtest.h>

namespace dp {
namespace {

constexpr int kSpare = Roster::kSpare;
constexpr int kLost = Roster::kLost;

TEST(Spares, InitialRosterPutsTheSparesLast) {
  const Roster r = initial_roster(3, 1, 2, 3);
  EXPECT_EQ(r.node_rank, (std::vector<int>{0, 1, kSpare}));
  EXPECT_EQ(r.spares_left(), 1);
  EXPECT_EQ(r.node_holding(1), 1);
  EXPECT_EQ(r.node_holding(2), -1);
  EXPECT_EQ(initial_roster(2, 0, 4, 1).node_rank, (std::vector<int>{0, 1}));
}

TEST(Spares, ASpareTakesTheLostNodesRankAndRanks) {
  const Roster r = initial_roster(3, 1, 2, 3);
  const RestartPlan p = plan_restart(r, Setback::node_lost, 1);
  ASSERT_EQ(p.verdict, RestartPlan::Verdict::restart) << p.why;
  EXPECT_EQ(p.spare, 2);
  EXPECT_EQ(p.node_rank, 1);
  EXPECT_EQ(p.roster.node_rank, (std::vector<int>{0, kLost, 1}));
  EXPECT_EQ(p.roster.restarts, 1);
  EXPECT_EQ(node_rank_ranks(p.node_rank, 2), (std::vector<int>{2, 3}));
  const TaskPlace t = acting_place(p.node_rank, 1, 2);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.local_world_size, 2);
  EXPECT_EQ(t.node_rank, 1);
}

TEST(Spares, RankZerosNodeIsReplacedLikeAnyOther) {
  const RestartPlan p = plan_restart(initial_roster(3, 1, 2, 3), Setback::node_lost, 0);
  ASSERT_EQ(p.verdict, RestartPlan::Verdict::restart);
  EXPECT_EQ(p.roster.node_rank, (std::vector<int>{kLost, 1, 0}));
  EXPECT_EQ(p.roster.node_holding(0), 2);
}

TEST(Spares, ASecondLossWithOneSpareEndsTheStepNamingWhy) {
  const RestartPlan first = plan_restart(initial_roster(3, 1, 2, 3), Setback::node_lost, 1);
  const RestartPlan second = plan_restart(first.roster, Setback::node_lost, 0);
  EXPECT_EQ(second.verdict, RestartPlan::Verdict::end);
  EXPECT_NE(second.why.find("no spare node is left"), std::string::npos) << second.why;
  EXPECT_NE(second.why.find("--dp-spares"), std::string::npos) << second.why;
}

TEST(Spares, TheLowestLiveSpareGoesFirst) {
  Roster r = initial_roster(4, 2, 1, 5);
  r.node_rank[2] = kLost;  // a spare lost while parked
  const RestartPlan p = plan_restart(r, Setback::node_lost, 0);
  ASSERT_EQ(p.verdict, RestartPlan::Verdict::restart);
  EXPECT_EQ(p.spare, 3);
}

TEST(Spares, LosingASpareRestartsNothing) {
  const RestartPlan p = plan_restart(initial_roster(3, 1, 2, 3), Setback::node_lost, 2);
  EXPECT_EQ(p.verdict, RestartPlan::Verdict::none);
  EXPECT_EQ(p.roster.node_rank, (std::vector<int>{0, 1, kLost}));
  EXPECT_EQ(p.roster.spares_left(), 0);
  EXPECT_EQ(p.roster.restarts, 0);
}

TEST(Spares, AFailedProgramRestartsInPlaceWithinTheBudget) {
  Roster r = initial_roster(2, 0, 2, 2);
  RestartPlan p = plan_restart(r, Setback::program_failed, 1);
  ASSERT_EQ(p.verdict, RestartPlan::Verdict::restart);
  EXPECT_EQ(p.spare, -1);
  EXPECT_EQ(p.node_rank, -1);
  EXPECT_EQ(p.roster.node_rank, r.node_rank);
  p = plan_restart(p.roster, Setback::program_failed, 0);
  ASSERT_EQ(p.verdict, RestartPlan::Verdict::restart);
  EXPECT_EQ(p.roster.restarts, 2);
  p = plan_restart(p.roster, Setback::program_failed, 0);
  EXPECT_EQ(p.verdict, RestartPlan::Verdict::end);
  EXPECT_NE(p.why.find("--dp-max-restarts=2"), std::string::npos) << p.why;
}

// A bad GPU: the program fails at once on the same node, twice in a row;
// that node is retired for a spare while one is left. A failure after the
// programs ran a while, or between two at once, resets the count.
TEST(Spares, ANodeWhoseProgramFailsAtOnceTwiceIsRetiredWhileASpareIsLeft) {
  const Roster r = initial_roster(2, 1, 2, 3);
  int early = 0;
  EXPECT_EQ(failure_setback(r, early, true), Setback::program_failed);
  EXPECT_EQ(failure_setback(r, early, true), Setback::node_lost);
  EXPECT_EQ(early, 0);
  EXPECT_EQ(failure_setback(r, early, true), Setback::program_failed);
  EXPECT_EQ(failure_setback(r, early, false), Setback::program_failed);
  EXPECT_EQ(failure_setback(r, early, true), Setback::program_failed);
  const Roster none = initial_roster(2, 0, 2, 3);
  early = 0;
  EXPECT_EQ(failure_setback(none, early, true), Setback::program_failed);
  EXPECT_EQ(failure_setback(none, early, true), Setback::program_failed)
      << "without a spare left the budget decides";
}

TEST(Spares, TheBudgetBoundsLossesToo) {
  const RestartPlan p = plan_restart(initial_roster(3, 1, 2, 0), Setback::node_lost, 1);
  EXPECT_EQ(p.verdict, RestartPlan::Verdict::end);
  EXPECT_NE(p.why.find("--dp-max-restarts=0"), std::string::npos) << p.why;
}

TEST(Spares, ALossDuringARestartTakesASpareButNoBudget) {
  Roster r = initial_roster(4, 2, 1, 1);
  RestartPlan p = plan_restart(r, Setback::node_lost, 0);
  ASSERT_EQ(p.verdict, RestartPlan::Verdict::restart);
  EXPECT_EQ(p.roster.restarts, 1);
  p = plan_further_loss(p.roster, 1);
  ASSERT_EQ(p.verdict, RestartPlan::Verdict::restart) << p.why;
  EXPECT_EQ(p.roster.restarts, 1);
  EXPECT_EQ(p.roster.node_rank, (std::vector<int>{kLost, kLost, 0, 1}));
}

TEST(Spares, NodesOutsideTheRosterAreNoNodes) {
  EXPECT_EQ(plan_restart(initial_roster(2, 1, 1, 1), Setback::node_lost, 5).verdict,
            RestartPlan::Verdict::end);
  EXPECT_EQ(plan_further_loss(initial_roster(2, 1, 1, 1), -1).verdict, RestartPlan::Verdict::none);
}

TEST(Spares, ALauncherStepSurvivesAsManyLossesAsLaunchersWait) {
  const Roster r = initial_roster(3, 0, 1, 1);  // every launcher runs
  RestartPlan p = plan_launcher_loss(r, 0, 1);
  ASSERT_EQ(p.verdict, RestartPlan::Verdict::restart);
  EXPECT_EQ(p.roster.restarts, 1);
  EXPECT_EQ(p.spare, -1);  // torchrun's rendezvous picks who takes the place
  EXPECT_EQ(plan_launcher_loss(p.roster, 0, 1).verdict, RestartPlan::Verdict::none);
  p = plan_launcher_loss(p.roster, 2, 1);
  EXPECT_EQ(p.verdict, RestartPlan::Verdict::end);
  EXPECT_NE(p.why.find("no spare node is left"), std::string::npos) << p.why;
}

TEST(Spares, TheRestartLineNamesWhatHappenedAndEachPhase) {
  const RestartRecord r{.count = 1,
                        .lost_host = "n2",
                        .why = "its agent's connection dropped",
                        .spare_host = "n3",
                        .node_rank = 1,
                        .tasks_per_node = 2,
                        .spares_left = 0,
                        .max_restarts = 3,
                        .phase_ms = {120, 300, 60, 2100, -1}};
  EXPECT_EQ(restart_line(r),
            "restart 1 of 3: node n2 lost (its agent's connection dropped); spare n3 takes node "
            "rank 1 (ranks 2-3), 0 spare(s) left; detect 0.1 s, stop 0.3 s, relaunch 0.1 s, "
            "rendezvous 2.1 s");
  RestartRecord in_place;
  in_place.count = 2;
  in_place.max_restarts = 2;
  in_place.why = "rank 1 exited with code 3";
  in_place.phase_ms[4] = 900;
  EXPECT_EQ(restart_line(in_place),
            "restart 2 of 2: in place (rank 1 exited with code 3); first step 0.9 s");
}

}  // namespace
}  // namespace dp
