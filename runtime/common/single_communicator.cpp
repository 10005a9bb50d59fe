#include "single_communicator.hpp"

#include <cstring>
#include <string>

#include "arg_checks.hpp"
#include "op_queue.hpp"

namespace dp::detail {
namespace {

class SingleCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Backend backend() const override { return Backend::single; }
  std::string describe() const override { return "single, no peers"; }

  Result<void> all_reduce(void* buf, size_t count, DType, ReduceOp) override {
    return check_buffer("all_reduce", buf, count);
  }
  Result<std::unique_ptr<Work>> all_reduce_async(void* buf, size_t count, DType type,
                                                 ReduceOp op) override {
    return std::unique_ptr<Work>(new ReadyWork(all_reduce(buf, count, type, op)));
  }
  Result<void> broadcast(void* buf, size_t count, DType, int root) override {
    DP_TRY(check_buffer("broadcast", buf, count));
    return check_root("broadcast", root, 1);
  }
  Result<void> all_gather(const void* send, void* recv, size_t count, DType type) override {
    DP_TRY(check_buffer("all_gather", send, count));
    DP_TRY(check_buffer("all_gather", recv, count));
    if (count > 0 && send != recv) std::memmove(recv, send, count * dtype_size(type));
    return {};
  }
  Result<void> barrier() override { return {}; }
};

}  // namespace

std::unique_ptr<Communicator> make_single_communicator() {
  return std::make_unique<SingleCommunicator>();
}

}  // namespace dp::detail
