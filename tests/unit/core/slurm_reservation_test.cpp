// Which reserved ports a step may take: only what Slurm reserved for it
// (slurmctld's record, or where slurmctld cannot answer the job's list inside
// MpiParams=ports=), never a privileged one; a refused list is named with
// the variable, the port and why.
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

dp::ReservationSources without_slurmctld(const char* job_env, const char* mpi_params) {
  dp::ReservationSources s;
  if (job_env) s.job_env = job_env;
  s.slurmctld_error = "cannot read step 7.0 from slurmctld: Unable to contact slurm controller";
  if (mpi_params) s.mpi_ports = dp::mpi_ports_range(mpi_params);
  return s;
}

// Taken as `ports`, nothing named.
void expect_taken(const dp::ReservationSources& s, const std::string& ports) {
  auto r = dp::slurm_reservation(s);
  EXPECT_EQ(r.ports, ports);
  EXPECT_EQ(r.refusal, "");
}

TEST(MpiPortsRange, ReadFromMpiParamsWords) {
  EXPECT_EQ(dp::mpi_ports_range("ports=12000-12999"), std::pair(12000, 12999));
  EXPECT_EQ(dp::mpi_ports_range("disable_slurm_hydra_bootstrap,ports=1000-1010"),
            std::pair(1000, 1010));
  for (const char* none : {"", "ports=", "ports=12000", "ports=2-1", "ports=0-5", "portsx=1-2",
                           "ports=1-70000", "ports=a-b"})
    EXPECT_FALSE(dp::mpi_ports_range(none)) << none;
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

TEST(SlurmReservation, WithoutSlurmctldOnlyPortsInsideMpiParams) {
  expect_taken(without_slurmctld("12000-12001", "ports=12000-12999"), "12000-12001");
  auto r = dp::slurm_reservation(without_slurmctld("29500", "ports=12000-12999"));
  EXPECT_EQ(r.ports, "");
  EXPECT_TRUE(has(r.refusal, "port 29500 is outside MpiParams=ports=12000-12999")) << r.refusal;
  EXPECT_TRUE(has(r.refusal, "Unable to contact slurm controller")) << r.refusal;
  r = dp::slurm_reservation(without_slurmctld("29500", nullptr));
  EXPECT_EQ(r.ports, "");
  EXPECT_TRUE(has(r.refusal, "sets no MpiParams=ports=")) << r.refusal;
  // Inside a privileged MpiParams range: still refused.
  r = dp::slurm_reservation(without_slurmctld("879", "ports=800-900"));
  EXPECT_EQ(r.ports, "");
  EXPECT_TRUE(has(r.refusal, "port 879 is below")) << r.refusal;
  EXPECT_EQ(dp::slurm_reservation(without_slurmctld(nullptr, "ports=1-2")).ports, "");
}

}  // namespace
