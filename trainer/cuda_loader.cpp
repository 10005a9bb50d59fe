#include "cuda_loader.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <mutex>
#include <optional>

namespace dpt {
namespace {

std::string module_path() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  const auto slash = exe.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string(".") : exe.substr(0, slash);
  return dir + "/" + DP_TRAINER_MODULE_DIR + "/" + kCudaModuleFile;
}

dp::Result<const CudaModule*> open_module() {
  const std::string path = module_path();
  if (access(path.c_str(), F_OK) != 0)
    return dp::make_error(dp::Errc::unavailable,
                          std::string("the CUDA trainer is not installed (no ") + path +
                              "); install the package " + kCudaModulePackage +
                              " or use --device cpu");
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return dp::make_error(dp::Errc::unavailable,
                          "the CUDA trainer " + path + " could not be loaded (" +
                              (why != nullptr ? why : "unknown reason") +
                              "); install the CUDA runtime and cuBLAS that " + kCudaModulePackage +
                              " depends on, or use --device cpu");
  }
  auto entry = reinterpret_cast<CudaModuleEntry>(dlsym(handle, kCudaModuleEntry));
  const CudaModule* module = entry != nullptr ? entry() : nullptr;
  if (module == nullptr || std::string(module->version) != DP_VERSION_STRING) {
    dlclose(handle);
    return dp::make_error(dp::Errc::unavailable, "the CUDA trainer " + path +
                                                     " is not the one of this dp-trainer (" +
                                                     DP_VERSION_STRING + "); install " +
                                                     kCudaModulePackage + " of the same version");
  }
  return module;
}

}  // namespace

dp::Result<const CudaModule*> cuda_module() {
  static std::optional<dp::Result<const CudaModule*>> m;
  static std::once_flag once;
  std::call_once(once, [] { m.emplace(open_module()); });
  return *m;
}

}  // namespace dpt
