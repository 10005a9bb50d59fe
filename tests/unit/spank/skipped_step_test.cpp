// DP_SKIP_STEP: srun names the explained or refused step and its status; nodes read it back.
#include "skipped_step.hpp"

#include <gtest/gtest.h>

namespace dp::spank {
namespace {

TEST(SkippedStep, TheValueNamesTheStepAndTheStatus) {
  EXPECT_EQ(format_skipped_step(12, 3, 0), "12.3:0");
  EXPECT_EQ(skipped_step_status(format_skipped_step(12, 3, 0), 12, 3), 0);
  EXPECT_EQ(skipped_step_status(format_skipped_step(4294967294u, 0, 255), 4294967294u, 0), 255);
}

// A value inherited from an enclosing step, or one the user wrote, that does
// not name this very step leaves the step to run.
TEST(SkippedStep, AnotherStepsOrAMalformedValueIsIgnored) {
  EXPECT_FALSE(skipped_step_status("12.3:1", 12, 4));
  EXPECT_FALSE(skipped_step_status("12.3:1", 1, 3));
  EXPECT_FALSE(skipped_step_status("112.3:1", 12, 3));
  EXPECT_FALSE(skipped_step_status("12.3", 12, 3));
  EXPECT_FALSE(skipped_step_status("12.3:", 12, 3));
  EXPECT_FALSE(skipped_step_status("12.3:256", 12, 3));
  EXPECT_FALSE(skipped_step_status("12.3:-1", 12, 3));
  EXPECT_FALSE(skipped_step_status("12.3:1x", 12, 3));
  EXPECT_FALSE(skipped_step_status("", 12, 3));
}

// srun exits with SLURM_EXIT_ERROR when it cannot launch a step (1 without it).
TEST(SkippedStep, RefusalsExitAsSrunDoesWhenItCannotLaunch) {
  EXPECT_EQ(srun_error_status(nullptr), 1);
  EXPECT_EQ(srun_error_status("7"), 7);
  EXPECT_EQ(srun_error_status("0"), 1);
  EXPECT_EQ(srun_error_status("abc"), 1);
  EXPECT_EQ(srun_error_status("300"), 1);
}

}  // namespace
}  // namespace dp::spank
