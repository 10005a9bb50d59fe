// The SPANK entry points: each hands over to the file of its Slurm context
// (srun_context.cpp, allocator_context.cpp, stepd_context.cpp). Nothing here
// may let a C++ exception reach Slurm.
#include <exception>
#include <string>
#include <vector>

#include "contexts.hpp"
#include "dp/options.hpp"
#include "dp/site_config.hpp"
#include "plugin_state.hpp"
#include "slurm_headers.hpp"

extern "C" {
extern const char plugin_name[];
extern const char plugin_type[];
extern const unsigned int plugin_version;
extern const unsigned int spank_plugin_version;
SPANK_PLUGIN(dp, 1)
}

#if DP_SLURM_SPANK_FAILURE_MODE
// slurm-dp's failures are a job's (a bad site line fails every job the
// same way), never a reason to drain the node; spank.h declares it extern "C".
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

namespace {

using dp::spank::report_error;
using dp::spank::state;

// 0 or -1 only: Slurm before 25.05 ignored a positive return, 25.05 on
// takes any non-zero one for an error.
template <class F>
int guarded(const char* where, F&& f) noexcept {
  try {
    return f() == 0 ? 0 : -1;
  } catch (const std::exception& e) {
    report_error(std::string("internal error in ") + where + ": " + e.what());
  } catch (...) {
    report_error(std::string("internal error in ") + where);
  }
  return -1;
}

// A callback that acts in one Slurm context only and is a no-op elsewhere.
int only_in(spank_context_t ctx, const char* where, int (*act)(spank_t), spank_t sp) noexcept {
  return guarded(where, [&] { return spank_context() == ctx ? act(sp) : 0; });
}

int on_option(int val, const char* optarg, int remote) noexcept {
  return guarded("option", [&] {
    const auto& specs = dp::option_specs();
    if (val < 0 || static_cast<size_t>(val) >= specs.size()) return -1;
    auto r = dp::apply_option(state().cli_options, specs[static_cast<size_t>(val)].name, optarg);
    if (r) return 0;
    state().option_error = true;
    // In slurmstepd the values are srun's, already checked there: the node
    // reports the failure through the tasks (stepd_context.cpp).
    if (remote) return 0;
    report_error(dp::describe(r.error()));
    return -1;
  });
}

int register_options(spank_t sp) {
  const auto& specs = dp::option_specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    spank_option opt{};
    opt.name = const_cast<char*>(specs[i].name);
    opt.arginfo = const_cast<char*>(specs[i].arginfo);
    opt.usage = const_cast<char*>(specs[i].usage);
    opt.has_arg = specs[i].arginfo ? 1 : 0;
    opt.val = static_cast<int>(i);
    opt.cb = on_option;
    // Slurm copies the struct; the strings are static.
    if (const spank_err_t rc = spank_option_register(sp, &opt); rc != ESPANK_SUCCESS) {
      report_error(std::string("cannot register --") + specs[i].name + ": " +
                   dp::spank::spank_text(rc));
      return -1;
    }
  }
  return 0;
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
  return guarded("init", [&] {
    const spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE) return 0;
    std::vector<std::string> words(av, av + ac);
    auto site = dp::parse_site_config(words);
    if (!site) {
      report_error(dp::describe(site.error()));
      return -1;
    }
    state().site = *site;
    if (ctx == S_CTX_LOCAL && dp::spank::srun_init(sp) != 0) return -1;
    return register_options(sp);
  });
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  return guarded("init_post_opt", [&] {
    switch (spank_context()) {
      case S_CTX_ALLOCATOR: return dp::spank::allocator_init_post_opt(sp);
      case S_CTX_REMOTE: return dp::spank::stepd_init_post_opt(sp);
      case S_CTX_LOCAL: return state().option_error ? -1 : 0;
      default: return 0;
    }
  });
}

extern "C" int slurm_spank_local_user_init(spank_t sp, int, char**) {
  return only_in(S_CTX_LOCAL, "local_user_init", dp::spank::srun_local_user_init, sp);
}

extern "C" int slurm_spank_task_init(spank_t sp, int, char**) {
  return only_in(S_CTX_REMOTE, "task_init", dp::spank::stepd_task_init, sp);
}

extern "C" int slurm_spank_task_post_fork(spank_t sp, int, char**) {
  return only_in(S_CTX_REMOTE, "task_post_fork", dp::spank::stepd_task_post_fork, sp);
}

extern "C" int slurm_spank_task_exit(spank_t sp, int, char**) {
  return only_in(S_CTX_REMOTE, "task_exit", dp::spank::stepd_task_exit, sp);
}

extern "C" int slurm_spank_exit(spank_t sp, int, char**) {
  return guarded("exit", [&] {
    switch (spank_context()) {
      case S_CTX_LOCAL: return dp::spank::srun_exit(sp);
      case S_CTX_REMOTE: return dp::spank::stepd_exit(sp);
      default: return 0;
    }
  });
}
