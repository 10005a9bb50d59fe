// libdp's side of the NCCL backend (nccl_module.hpp): the module is opened on
// first need from the folder beside libdp, once per process, and never
// closed (its communicators' code lives there).
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>

#include "backends.hpp"
#include "dp/params.hpp"
#include "gloo_store.hpp"
#include "nccl_module.hpp"
#include "startup_log.hpp"

namespace dp::detail {
namespace {

struct LoadedModule {
  const NcclModule* module = nullptr;
  std::string error;  // why there is none, for the nccl backend's error
};

// The folder of the object this code was linked into: libdp.so (by the path
// the dynamic loader opened, made absolute), or the program when it linked
// libdp's objects statically (the loader's name for it is empty).
std::string own_folder() {
  static const char anchor = 0;
  Dl_info info{};
  link_map* map = nullptr;
  std::string self;
  if (dladdr1(&anchor, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0 &&
      map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    char* real = realpath(map->l_name, nullptr);
    if (real != nullptr) {
      self = real;
      free(real);
    }
  } else {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n > 0) self.assign(buf, static_cast<size_t>(n));
  }
  const auto slash = self.rfind('/');
  return slash == std::string::npos ? std::string() : self.substr(0, slash);
}

LoadedModule open_module() {
  LoadedModule out;
  const std::string path = own_folder() + "/" + kNcclModuleDir + "/" + kNcclModuleFile;
  if (access(path.c_str(), F_OK) != 0) {
    out.error = std::string("the NCCL backend is not installed (no ") + path +
                "); install the package " + kNcclModulePackage +
                " (it brings NCCL and the CUDA runtime) or use DP_BACKEND=gloo";
    return out;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    out.error = "the NCCL backend " + path + " could not be loaded (" +
                (why != nullptr ? why : "unknown reason") +
                "); install NVIDIA's libnccl2 and CUDA runtime that " + kNcclModulePackage +
                " depends on, or use DP_BACKEND=gloo";
    return out;
  }
  auto entry = reinterpret_cast<NcclModuleEntry>(dlsym(handle, kNcclModuleEntry));
  const NcclModule* module = entry != nullptr ? entry() : nullptr;
  if (module == nullptr || std::string(module->version) != DP_VERSION_STRING) {
    out.error = "the NCCL backend " + path + " is not the one of this libdp (version " +
                (module != nullptr ? module->version : "unknown") + ", libdp " + DP_VERSION_STRING +
                "); install " + kNcclModulePackage + " of the same version as slurm-dp";
    dlclose(handle);
    return out;
  }
  out.module = module;
  return out;
}

class LogPhases final : public NcclPhases {
 public:
  explicit LogPhases(StartupLog& log) : log_(log) {}
  void phase(const std::string& name) override { log_.phase(name); }

 private:
  StartupLog& log_;
};

const LoadedModule& loaded() {
  static LoadedModule m;
  static std::once_flag once;
  std::call_once(once, [] { m = open_module(); });
  return m;
}

}  // namespace

Result<NcclStore> open_nccl_store(const Context& ctx, std::chrono::milliseconds timeout) {
  auto js = open_job_store(ctx, timeout);
  if (!js) return js.error();
  auto owner = std::make_shared<JobStore>(std::move(*js));
  NcclStore out;
  out.store = owner->store.get();
  if (RendezvousClient* client = owner->client.get()) {
    auto* daemon = static_cast<DaemonStore*>(owner->store.get());  // the daemon's store
    out.publish_once = [daemon](const std::string& key, const std::vector<char>& value) {
      daemon->set_once(key, value);
    };
    out.on_abort = [client](std::function<void(const Error&)> f) {
      client->on_abort(std::move(f));
    };
    out.goodbye = [client] { (void)client->goodbye(); };
  }
  out.owner = std::move(owner);
  return out;
}

int usable_cuda_devices() noexcept {
  try {
    const LoadedModule& m = loaded();
    return m.module != nullptr ? m.module->cuda_devices() : 0;
  } catch (...) {
    return 0;  // no module we can use: no device we can drive
  }
}

Result<std::unique_ptr<Communicator>> make_nccl_communicator(const Context& ctx,
                                                             std::chrono::milliseconds timeout) {
  const LoadedModule& m = loaded();
  if (m.module == nullptr) return make_error(Errc::unavailable, "backend nccl: " + m.error);
  StartupLog log("nccl", ctx.rank);
  LogPhases phases(log);
  const NcclHost host{&open_nccl_store, &phases,
                      static_cast<int>(param(Param::nccl_ranks_per_root))};
  Error error;
  Communicator* c = m.module->make(ctx, timeout, host, &error);
  if (c == nullptr) return error;
  log.done();
  return std::unique_ptr<Communicator>(c);
}

}  // namespace dp::detail
