#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "report.hpp"

namespace dpt {
namespace {

// The metrics lines the e2e tests and gpu-check read with a regex: compact,
// keys in the order added, strings escaped, a value that is not finite null.
TEST(Report, OneCompactObjectInTheOrderAdded) {
  const std::string line = Json()
                               .add("event", "final")
                               .add("step", 60)
                               .add("loss", 0.5)
                               .add("ok", true)
                               .add("note", std::string("a \"b\"\n"))
                               .add("nan", std::nan(""))
                               .add("inf", std::numeric_limits<double>::infinity())
                               .str();
  EXPECT_EQ(
      line,
      R"({"event":"final","step":60,"loss":0.5,"ok":true,"note":"a \"b\"\n","nan":null,"inf":null})");
}

}  // namespace
}  // namespace dpt
