// The node agent's side of the flight recorders: its folder (0700, removed
// with it) and held RAS port, and a read that writes a rank's pipe and takes
// the dump the rank writes then, as PyTorch's monitor thread does (here a
// thread that reads the FIFO and writes a recorded dump in two halves).
#include "flight_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "dp/nccl_watch.hpp"

namespace dp::agent {
namespace {

using namespace std::chrono_literals;

std::string recorded_dump(int rank) {
  std::ifstream in(std::string(DP_FLIGHT_FIXTURES) + "/hung_rank" + std::to_string(rank) +
                   ".pickle");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A PyTorch rank's monitor thread: opens its pipe, and on a byte written to
// it dumps (first half, a pause, the rest: a read meanwhile sees it truncated).
class FakeRank {
 public:
  FakeRank(const std::string& dir, int rank) : dir_(dir), rank_(rank) {
    const std::string pipe = dir + "/" + flight_pipe_name(rank);
    EXPECT_EQ(mkfifo(pipe.c_str(), 0600), 0);
    fd_ = open(pipe.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeRank() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }

 private:
  void serve() {
    while (!stop_) {
      char b[16];
      if (read(fd_, b, sizeof b) > 0) {
        const std::string dump = recorded_dump(rank_);
        std::ofstream out(dir_ + "/" + flight_dump_name(rank_), std::ios::binary);
        out.write(dump.data(), static_cast<std::streamsize>(dump.size() / 2));
        out.flush();
        std::this_thread::sleep_for(100ms);
        out.write(dump.data() + dump.size() / 2,
                  static_cast<std::streamsize>(dump.size() - dump.size() / 2));
      }
      std::this_thread::sleep_for(20ms);
    }
  }
  std::string dir_;
  int rank_, fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(FlightReader, TheAgentsFolderAndPortAreItsOwnAndGoWithIt) {
  std::vector<std::string> notes;
  std::string dir;
  {
    auto p = FlightPlaces::create(7, 3, notes);
    EXPECT_TRUE(notes.empty());
    dir = p.dir();
    ASSERT_EQ(dir.rfind("/tmp/slurm-dp-fr.7.3.", 0), 0u) << dir;
    struct stat st {};
    ASSERT_EQ(stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_GT(p.ras_port(), 0);
    std::ofstream(dir + "/dump_rank0") << "x";
    ASSERT_EQ(mkfifo((dir + "/pipe_rank0.pipe").c_str(), 0600), 0);
  }
  struct stat st {};
  EXPECT_NE(stat(dir.c_str(), &st), 0) << "removed with the agent, its files too";
}

TEST(FlightReader, WritesEachRanksPipeAndTakesItsWholeDump) {
  std::vector<std::string> notes;
  auto places = FlightPlaces::create(7, 4, notes);
  FakeRank rank0(places.dir(), 0), rank1(places.dir(), 1);
  FlightTriggers triggers;
  // Rank 2 has no pipe: not an NCCL program (or its recorder is off).
  const std::vector<TaskStart> ranks{{0, 1000, 1}, {1, 1001, 1}, {2, 1002, 1}};
  const auto read =
      read_flights(places.dir(), ranks, std::chrono::steady_clock::now() + 3s, triggers);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[0].unread, "");
  EXPECT_EQ(read[0].pid, 1000);
  ASSERT_EQ(read[0].groups.size(), 2u);
  EXPECT_EQ(read[0].groups[0].last_enqueued, 22);
  EXPECT_TRUE(read[0].groups[0].pending);
  EXPECT_GT(read[0].groups[0].age_ms, 0);
  EXPECT_EQ(read[1].unread, "");
  EXPECT_EQ(read[1].groups[0].last_enqueued, 21);
  EXPECT_FALSE(read[1].arrivals.empty());
  EXPECT_NE(read[2].unread.find("no pipe"), std::string::npos) << read[2].unread;
  EXPECT_EQ(triggers.count(0), 1u);
  // A rank whose dump never comes in time: named, and the read ends at its deadline.
  const auto t0 = std::chrono::steady_clock::now();
  const std::string stale = places.dir() + "/" + flight_pipe_name(5);
  ASSERT_EQ(mkfifo(stale.c_str(), 0600), 0);
  const int keep = open(stale.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // reads, never dumps
  const auto none = read_flights(places.dir(), {{5, 1005, 1}}, t0 + 300ms, triggers);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(none[0].unread, "no dump within the read's time");
  close(keep);
  const auto gone = read_flights(places.dir(), {{5, 1005, 1}}, t0 + 300ms, triggers);
  EXPECT_EQ(gone[0].unread, "its pipe has no reader");
}

}  // namespace
}  // namespace dp::agent
