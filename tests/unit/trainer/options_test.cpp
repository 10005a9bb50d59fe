#include <gtest/gtest.h>

#include "options.hpp"

namespace dpt {
namespace {

std::string error_of(std::vector<std::string> args) {
  auto r = parse_options(args);
  return r.ok() ? "" : r.error().message;
}

TEST(Options, Defaults) {
  auto o = parse_options({});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->train.batch, 128);
  EXPECT_EQ(o->train.model.kind, ModelKind::mlp);
}

TEST(Options, ParsesValues) {
  auto o = parse_options({"--model", "cnn", "--channels", "8,16", "--optimizer", "adam", "--lr", "0.001",
                          "--warmup-steps", "50", "--lr-decay", "cosine", "--global-batch", "256",
                          "--epochs", "3", "--checkpoint", "/tmp/x", "--checkpoint-every", "10", "--resume"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->train.model.kind, ModelKind::cnn);
  EXPECT_EQ(o->train.model.channels, (std::vector<int>{8, 16}));
  EXPECT_EQ(o->train.optimizer.kind, OptimizerKind::adam);
  EXPECT_FLOAT_EQ(o->train.optimizer.lr, 0.001f);
  EXPECT_EQ(o->global_batch, 256);
  EXPECT_TRUE(o->train.resume);
}

TEST(Options, BadInputNamesTheOptionAndTheFix) {
  EXPECT_NE(error_of({"--batch", "0"}).find("--batch: invalid value '0'"), std::string::npos);
  EXPECT_NE(error_of({"--batch", "12x"}).find("--batch"), std::string::npos);
  EXPECT_NE(error_of({"--lr", "-1"}).find("--lr"), std::string::npos);
  EXPECT_NE(error_of({"--model", "rnn"}).find("use mlp, cnn or linear"), std::string::npos);
  EXPECT_NE(error_of({"--hidden", "512,,256"}).find("--hidden"), std::string::npos);
  EXPECT_NE(error_of({"--kernel", "4"}).find("odd"), std::string::npos);
  EXPECT_NE(error_of({"--epochs"}).find("--epochs: missing value"), std::string::npos);
  EXPECT_NE(error_of({"--frobnicate"}).find("unknown option '--frobnicate'"), std::string::npos);
  EXPECT_NE(error_of({"--resume"}).find("needs --checkpoint"), std::string::npos);
  EXPECT_NE(error_of({"--task", "regression", "--model", "cnn"}).find("--model"), std::string::npos);
}

}  // namespace
}  // namespace dpt
