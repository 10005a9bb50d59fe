// Rank 0's output: human progress lines on stdout and the same facts as JSON
// lines in --metrics FILE.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "dp/result.hpp"

namespace dpt {

// One flat JSON object, its keys in the order added (nlohmann/json writes
// it): Json().add("k", 1).add("s", "x").str(). A value that is not finite is
// written as null.
class Json {
 public:
  template <class T>
  Json& add(const char* key, const T& v) {
    j_[key] = v;
    return *this;
  }
  std::string str() const { return j_.dump(); }

 private:
  nlohmann::ordered_json j_ = nlohmann::ordered_json::object();
};

class MetricsLog {
 public:
  MetricsLog() = default;
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  ~MetricsLog();
  dp::Result<void> open(const std::string& path);  // empty path: disabled
  void write(const Json& j);                       // one line, flushed

 private:
  std::FILE* f_ = nullptr;
};

}  // namespace dpt
