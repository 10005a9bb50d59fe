// Backend::single: a world of one process. Every collective is a local copy
// or nothing, so a program written for data parallelism runs unchanged alone.
#pragma once

#include <memory>

#include "dp/communicator.hpp"

namespace dp::detail {

std::unique_ptr<Communicator> make_single_communicator();

}  // namespace dp::detail
