#include "dp/spares.hpp"

#include <gtest/gtest.h>

namespace dp {
namespace {

constexpr int kSpare = Roster::kSpare;
constexpr int kLost = Roster::kLost;

SiteConfig restart_site() {
  SiteConfig s;
  s.max_spares = 2;
  s.max_restarts = 3;
  return s;
}

Options restart_options(std::optional<int> spares, std::optional<int> max_restarts) {
  Options o;
  o.spares = spares;
  o.max_restarts = max_restarts;
  return o;
}

// srun's daemon launch, the layout plan and the keepers all take this shape.
TEST(RestartShape, SparesMakeKeepersOverTheNodesThatHoldRanks) {
  auto s = restart_shape(restart_options(1, std::nullopt), restart_site(), {6, 3, {2, 2, 2}, ""});
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_TRUE(*s);
  EXPECT_TRUE((*s)->keepers);
  EXPECT_EQ((*s)->spares, 1);
  EXPECT_EQ((*s)->tasks_per_node, 2);
  EXPECT_EQ((*s)->world_size, 4);
  EXPECT_EQ((*s)->max_restarts, 3);  // the site's budget
  s = restart_shape(restart_options(std::nullopt, 2), restart_site(), {4, 2, {}, ""});
  ASSERT_TRUE(s && *s);
  EXPECT_EQ((*s)->world_size, 4);
  EXPECT_EQ((*s)->max_restarts, 2);
}

// An explicit --dp-max-restarts=0 asks for no restart: a plain step (its
// tasks were once keepers while srun's daemon knew of no restart).
TEST(RestartShape, NoOptionOrABudgetOfZeroIsAPlainStep) {
  for (auto o : {restart_options(std::nullopt, std::nullopt), restart_options(std::nullopt, 0)}) {
    auto s = restart_shape(o, restart_site(), {4, 2, {2, 2}, ""});
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_FALSE(*s);
  }
}

TEST(RestartShape, ALauncherRestartsItsWorkersAndEveryLauncherIsARank) {
  auto s = restart_shape(restart_options(1, std::nullopt), restart_site(), {3, 3, {1}, "torchrun"});
  ASSERT_TRUE(s && *s);
  EXPECT_FALSE((*s)->keepers);
  EXPECT_EQ((*s)->world_size, 3);
  EXPECT_EQ((*s)->max_restarts, 1);  // each of its spares one restart of torchrun's
  s = restart_shape(restart_options(1, 2), restart_site(), {3, 3, {1}, "torchrun"});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("use its --max-restarts"), std::string::npos);
}

TEST(RestartShape, ImpossibleShapesNameTheOptionAndTheFix) {
  const struct {
    Options o;
    RestartAsk ask;
    const char* says;
  } cases[] = {
      {restart_options(3, std::nullopt), {8, 4, {}, ""}, "at most 2 spare nodes"},
      {restart_options(2, std::nullopt), {4, 2, {}, ""}, "ask Slurm for -N 3"},
      {restart_options(1, std::nullopt), {5, 2, {}, ""}, "--ntasks-per-node=T"},
      {restart_options(std::nullopt, 1), {6, 2, {4}, ""}, "6 tasks on 2 nodes unevenly"},
  };
  for (const auto& c : cases) {
    auto s = restart_shape(c.o, restart_site(), c.ask);
    ASSERT_FALSE(s) << c.says;
    EXPECT_NE(s.error().message.find(c.says), std::string::npos) << s.error().message;
    EXPECT_EQ(s.error().message.rfind("--dp-", 0), 0u) << s.error().message;
  }
  SiteConfig none = restart_site();
  none.max_spares = 0;
  auto s = restart_shape(restart_options(1, std::nullopt), none, {4, 2, {}, ""});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("max_spares=0"), std::string::npos);
}

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
