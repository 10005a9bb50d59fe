// Which reserved ports a step may take: only what Slurm reserved for it
// (slurmctld's record; where slurmctld cannot answer, none of the job's
// list), never a privileged one; a refused list is named with the variable,
// the port and why.
#include "dp/slurm_reservation.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

dp::ReservationSources from_slurmctld(const char* job_env, const char* record) {
  dp::ReservationSources s;
  if (job_env) s.job_env = job_env;
  s.slurmctld = record;
  return s;
}

dp::ReservationSources without_slurmctld(const char* job_env) {
  dp::ReservationSources s;
  if (job_env) s.job_env = job_env;
  s.slurmctld_error = "cannot read step 7.0 from slurmctld: Unable to contact slurm controller";
  return s;
}

// Taken as `ports`, nothing named.
void expect_taken(const dp::ReservationSources& s, const std::string& ports) {
  auto r = dp::slurm_reservation(s);
  EXPECT_EQ(r.ports, ports);
  EXPECT_EQ(r.refusal, "");
}

TEST(SlurmReservation, SlurmctldsRecordIsTheStepsReservation) {
  expect_taken(from_slurmctld("12000-12003", "12000-12003"), "12000-12003");
  // Written otherwise, the same ports.
  expect_taken(from_slurmctld("12000,12001", "12000-12001"), "12000-12001");
  // No variable, no reservation: nothing at all.
  expect_taken(from_slurmctld(nullptr, ""), "");
}

TEST(SlurmReservation, TheUsersOwnListIsRefusedNamingVariablePortAndWhy) {
  // The attack: Slurm reserved nothing, the user's shell says 879.
  auto r = dp::slurm_reservation(from_slurmctld("879", ""));
  EXPECT_EQ(r.ports, "");
  EXPECT_TRUE(has(r.refusal,
                  "SLURM_STEP_RESV_PORTS=879: port 879 is below "
                  "net.ipv4.ip_unprivileged_port_start (1024)"))
      << r.refusal;
  EXPECT_TRUE(has(r.refusal, "leased from the site's ports= range instead")) << r.refusal;
  // An unprivileged port Slurm did not reserve for this step (another step's).
  r = dp::slurm_reservation(from_slurmctld("12005", ""));
  EXPECT_EQ(r.ports, "");
  EXPECT_TRUE(has(r.refusal,
                  "SLURM_STEP_RESV_PORTS=12005: port 12005 is not one Slurm reserved "
                  "for this step (slurmctld's record of the step: none)"))
      << r.refusal;
  // Slurm did reserve, the variable names more: Slurm's are the step's.
  r = dp::slurm_reservation(from_slurmctld("12000-12001,22", "12000-12001"));
  EXPECT_EQ(r.ports, "12000-12001");
  EXPECT_TRUE(has(r.refusal, "port 22 is below")) << r.refusal;
  EXPECT_TRUE(has(r.refusal, "the step uses Slurm's (12000-12001)")) << r.refusal;
  // Nine ports, 111 and 1023 among them: the first privileged one is named.
  r = dp::slurm_reservation(from_slurmctld("2049,111,1023,2050-2055", ""));
  EXPECT_EQ(r.ports, "");
  EXPECT_TRUE(has(r.refusal, "port 111 is below")) << r.refusal;
  r = dp::slurm_reservation(from_slurmctld("x\n\x1b[2J", ""));
  EXPECT_EQ(r.ports, "");
  EXPECT_TRUE(has(r.refusal, "SLURM_STEP_RESV_PORTS=x\\n\\x1b[2J: not a port list")) << r.refusal;
}

TEST(SlurmReservation, APrivilegedReservationOfSlurmsIsRefusedToo) {
  auto r = dp::slurm_reservation(from_slurmctld("800-801", "800-801"));
  EXPECT_EQ(r.ports, "");
  EXPECT_TRUE(has(r.refusal, "Slurm's reservation for this step (800-801): port 800 is below"))
      << r.refusal;
  EXPECT_TRUE(has(r.refusal, "MpiParams=ports=")) << r.refusal;
  // A node whose admin lowered the kernel's start: its ports are unprivileged.
  auto low = from_slurmctld("800-801", "800-801");
  low.unprivileged_start = 500;
  EXPECT_EQ(dp::slurm_reservation(low).ports, "800-801");
}

// Without slurmctld's answer the job's list is only the user's word: even a
// list inside MpiParams=ports= may be another step's reservation (a second
// user copies it from that step's environment), so none is taken.
TEST(SlurmReservation, WithoutSlurmctldNoPortOfTheJobsListIsTaken) {
  for (const char* list : {"12000-12001", "29500", "12000"}) {
    auto r = dp::slurm_reservation(without_slurmctld(list));
    EXPECT_EQ(r.ports, "") << list;
    EXPECT_TRUE(has(r.refusal, std::string("SLURM_STEP_RESV_PORTS=") + list + ": ")) << r.refusal;
    EXPECT_TRUE(has(r.refusal, "Unable to contact slurm controller")) << r.refusal;
    EXPECT_TRUE(has(r.refusal, "may name another step's ports")) << r.refusal;
    EXPECT_TRUE(has(r.refusal, "leased from the site's ports= range instead")) << r.refusal;
  }
  // A privileged port is named first, as with slurmctld's answer.
  auto r = dp::slurm_reservation(without_slurmctld("879"));
  EXPECT_EQ(r.ports, "");
  EXPECT_TRUE(has(r.refusal, "port 879 is below")) << r.refusal;
  EXPECT_EQ(dp::slurm_reservation(without_slurmctld(nullptr)).ports, "");
}

}  // namespace
