// Minimal plugin until the SPANK work lands (issue 3): registers --dp-world.
#include <cstdint>
extern "C" {
#include <slurm/spank.h>
}

extern "C" {
extern const char plugin_name[];
extern const char plugin_type[];
extern const unsigned int plugin_version;
extern const unsigned int spank_plugin_version;
SPANK_PLUGIN(dp, 1)
}

namespace {
int on_world(int, const char*, int) { return 0; }
struct spank_option world_opt = {const_cast<char*>("dp-world"), const_cast<char*>("auto|N"),
                                 const_cast<char*>("[slurm-dp] data-parallel world: auto or the step's task count"),
                                 1, 0, on_world};
}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int, char**) {
  return spank_option_register(sp, &world_opt) == ESPANK_SUCCESS ? 0 : -1;
}
