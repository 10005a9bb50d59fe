#include "report.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>

namespace dpt {

void Json::key(const char* k) {
  if (!body_.empty()) body_ += ',';
  body_ += '"';
  body_ += k;
  body_ += "\":";
}

Json& Json::add(const char* k, double v) {
  key(k);
  if (!std::isfinite(v)) {
    body_ += "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  body_ += buf;
  return *this;
}

Json& Json::add(const char* k, long long v) {
  key(k);
  body_ += std::to_string(v);
  return *this;
}

Json& Json::add(const char* k, bool v) {
  key(k);
  body_ += v ? "true" : "false";
  return *this;
}

Json& Json::add(const char* k, const std::string& v) {
  key(k);
  body_ += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') {
      body_ += '\\';
      body_ += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      body_ += esc;
    } else {
      body_ += c;
    }
  }
  body_ += '"';
  return *this;
}

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

dp::Result<void> MetricsLog::open(const std::string& path) {
  if (path.empty()) return {};
  f_ = std::fopen(path.c_str(), "w");
  if (!f_)
    return dp::make_error(dp::Errc::invalid_argument,
                          "--metrics: cannot write " + path + ": " + std::strerror(errno));
  return {};
}

void MetricsLog::write(const Json& j) {
  if (!f_) return;
  std::fputs(j.str().c_str(), f_);
  std::fputc('\n', f_);
  std::fflush(f_);
}

}  // namespace dpt
