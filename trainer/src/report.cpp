#include "report.hpp"
#include "dp/sys_error.hpp"

#include <cerrno>
#include <cstring>

namespace dpt {

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

dp::Result<void> MetricsLog::open(const std::string& path) {
  if (path.empty()) return {};
  f_ = std::fopen(path.c_str(), "w");
  if (!f_)
    return dp::make_error(dp::Errc::invalid_argument,
                          "--metrics: cannot write " + path + ": " + dp::errno_text());
  return {};
}

void MetricsLog::write(const Json& j) {
  if (!f_) return;
  std::fputs(j.str().c_str(), f_);
  std::fputc('\n', f_);
  std::fflush(f_);
}

}  // namespace dpt
