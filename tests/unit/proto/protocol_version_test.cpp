// Which protocol two releases speak: one release apart they agree, in either
// order of upgrade; further apart both sides refuse in one line that names
// both versions and the hosts to upgrade.
#include "protocol_version.hpp"

#include <gtest/gtest.h>

namespace dp::rdv {
namespace {

const ProtocolSide kAgent{"this node's dp-nodeagent", "slurm-dp on the compute nodes"};
const ProtocolSide kDaemon{"the step's dp-rendezvousd", "slurm-dp on srun's host"};

TEST(ProtocolVersion, EachReleaseSpeaksItsOwnAndTheOneBefore) {
  EXPECT_EQ(range_of(3).oldest, 3u);  // nothing before 3 announced its version
  EXPECT_EQ(range_of(3).newest, 3u);
  EXPECT_EQ(range_of(4).oldest, 3u);
  EXPECT_EQ(range_of(5).oldest, 4u);
  EXPECT_EQ(protocol_range().newest, 3u);
}

TEST(ProtocolVersion, TheConnectorSaysTheOlderOfTheTwoNewest) {
  EXPECT_EQ(*version_to_say(range_of(4), 0, kAgent, kDaemon), 3u);  // a release that announced none
  EXPECT_EQ(*version_to_say(range_of(4), 3, kAgent, kDaemon), 3u);
  EXPECT_EQ(*version_to_say(range_of(4), 4, kAgent, kDaemon), 4u);
  EXPECT_EQ(*version_to_say(range_of(4), 5, kAgent, kDaemon), 4u);
}

TEST(ProtocolVersion, ReleasesTooFarApartNameBothAndWhatToUpgrade) {
  auto older_daemon = version_to_say(range_of(5), 0, kAgent, kDaemon);
  ASSERT_FALSE(older_daemon);
  EXPECT_EQ(older_daemon.error().code, Errc::protocol);
  EXPECT_EQ(older_daemon.error().message,
            "slurm-dp releases too far apart: this node's dp-nodeagent speaks protocol versions "
            "4-5, the step's dp-rendezvousd version 3; upgrade slurm-dp on srun's host to the "
            "release of this node's dp-nodeagent (releases one protocol version apart work "
            "together: upgrade one release at a time, login hosts and compute nodes in either "
            "order)");
  auto older_agent = check_said_version(range_of(5), 3, kDaemon, kAgent);
  ASSERT_FALSE(older_agent);
  EXPECT_NE(older_agent.error().message.find("the step's dp-rendezvousd speaks protocol versions "
                                             "4-5, this node's dp-nodeagent version 3; upgrade "
                                             "slurm-dp on the compute nodes to the release of "
                                             "the step's dp-rendezvousd"),
            std::string::npos)
      << older_agent.error().message;
  // A hello newer than the acceptor's newest: the acceptor is the older side.
  auto newer_hello = check_said_version(range_of(3), 5, kDaemon, kAgent);
  ASSERT_FALSE(newer_hello);
  EXPECT_NE(newer_hello.error().message.find("upgrade slurm-dp on srun's host"), std::string::npos)
      << newer_hello.error().message;
  EXPECT_TRUE(check_said_version(range_of(5), 4, kDaemon, kAgent));
  EXPECT_TRUE(check_said_version(range_of(5), 5, kDaemon, kAgent));
}

// Every pair of releases, connector and acceptor: they talk exactly when one
// release apart or less, and then in the older one's newest version.
TEST(ProtocolVersion, ReleasesOneApartTalkInEitherOrder) {
  for (uint32_t connector = 3; connector <= 7; ++connector) {
    for (uint32_t acceptor = 3; acceptor <= 7; ++acceptor) {
      const bool near = connector + 1 >= acceptor && acceptor + 1 >= connector;
      auto said = version_to_say(range_of(connector), acceptor, kAgent, kDaemon);
      const bool talk = said && check_said_version(range_of(acceptor), *said, kDaemon, kAgent);
      EXPECT_EQ(talk, near) << connector << " to " << acceptor;
      if (talk) {
        EXPECT_EQ(*said, std::min(connector, acceptor));
      }
    }
  }
}

}  // namespace
}  // namespace dp::rdv
