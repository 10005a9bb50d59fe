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

// Each model's defaults are its measured recipe (trainer/README.md); an
// option given overrides only its own part.
TEST(Options, EachModelDefaultsToItsRecipe) {
  auto mlp = parse_options({});
  ASSERT_TRUE(mlp.ok());
  EXPECT_EQ(mlp->train.optimizer.kind, OptimizerKind::sgd);
  EXPECT_FLOAT_EQ(mlp->train.optimizer.lr, 0.05f);
  EXPECT_EQ(mlp->train.optimizer.decay, DecayKind::cosine);
  EXPECT_EQ(mlp->global_batch, 0);

  auto cnn = parse_options({"--model", "cnn"});
  ASSERT_TRUE(cnn.ok());
  EXPECT_EQ(cnn->train.optimizer.kind, OptimizerKind::adam);
  EXPECT_FLOAT_EQ(cnn->train.optimizer.lr, 0.002f);
  EXPECT_EQ(cnn->train.optimizer.warmup_steps, 50);
  EXPECT_EQ(cnn->train.optimizer.decay, DecayKind::cosine);
  EXPECT_EQ(cnn->global_batch, 128);

  auto mine =
      parse_options({"--model", "cnn", "--lr", "0.01", "--batch", "32", "--lr-decay", "constant"});
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->train.optimizer.kind, OptimizerKind::adam);
  EXPECT_FLOAT_EQ(mine->train.optimizer.lr, 0.01f);
  EXPECT_EQ(mine->train.optimizer.decay, DecayKind::constant);
  EXPECT_EQ(mine->global_batch, 0);
  EXPECT_EQ(mine->train.batch, 32);

  auto reg = parse_options({"--task", "regression"});
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(reg->train.optimizer.decay, DecayKind::constant);
  // The regression task runs a number of steps, whatever the world size...
  EXPECT_EQ(reg->train.max_steps, 200);
  EXPECT_GE(reg->train.epochs, 1000);
  // ...unless the length is given.
  auto ten = parse_options({"--task", "regression", "--epochs", "10"});
  ASSERT_TRUE(ten.ok());
  EXPECT_EQ(ten->train.epochs, 10);
  EXPECT_EQ(ten->train.max_steps, 0);
  auto steps = parse_options({"--task", "regression", "--max-steps", "50"});
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->train.max_steps, 50);
  EXPECT_EQ(steps->train.epochs, 1);
}

TEST(Options, PrecisionIsForTheGpu) {
  auto o = parse_options({"--precision", "bf16"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->precision, Precision::bf16);
  EXPECT_NE(error_of({"--precision", "tf32", "--device", "cpu"}).find("--precision"),
            std::string::npos);
  EXPECT_NE(error_of({"--precision", "fp16"}).find("use fp32, tf32 or bf16"), std::string::npos);
}

TEST(Options, ParsesValues) {
  auto o = parse_options({"--model",
                          "cnn",
                          "--channels",
                          "8,16",
                          "--optimizer",
                          "adam",
                          "--lr",
                          "0.001",
                          "--warmup-steps",
                          "50",
                          "--lr-decay",
                          "cosine",
                          "--global-batch",
                          "256",
                          "--epochs",
                          "3",
                          "--checkpoint",
                          "/tmp/x",
                          "--checkpoint-every",
                          "10",
                          "--resume"});
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
  EXPECT_NE(error_of({"--task", "regression", "--model", "cnn"}).find("--model"),
            std::string::npos);
}

}  // namespace
}  // namespace dpt
