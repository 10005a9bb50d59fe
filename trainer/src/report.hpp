// Rank 0's output: human progress lines on stdout and the same facts as JSON
// lines in --metrics FILE.
#pragma once

#include <cstdio>
#include <string>

#include "dp/result.hpp"

namespace dpt {

// Builds one flat JSON object: Json().add("k", 1).add("s", "x").str().
class Json {
 public:
  Json& add(const char* key, double v);
  Json& add(const char* key, long long v);
  Json& add(const char* key, int v) { return add(key, static_cast<long long>(v)); }
  Json& add(const char* key, long v) { return add(key, static_cast<long long>(v)); }
  Json& add(const char* key, const std::string& v);
  Json& add(const char* key, const char* v) { return add(key, std::string(v)); }
  Json& add(const char* key, bool v);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const char* k);
  std::string body_;
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
