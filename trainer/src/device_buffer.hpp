// Owning handle of one Ops allocation: no per-step allocations, no leaks.
#pragma once

#include <cstddef>
#include <utility>

#include "ops.hpp"

namespace dpt {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Ops& ops, size_t n) : ops_(&ops), data_(ops.alloc(n)), size_(data_ ? n : 0) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ops_(o.ops_), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ops_ = o.ops_;
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }
  bool valid() const { return data_ != nullptr; }

 private:
  void reset() {
    if (data_) ops_->release(data_);
    data_ = nullptr;
    size_ = 0;
  }
  Ops* ops_ = nullptr;
  float* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dpt
