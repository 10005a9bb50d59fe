#include "dp/dp.h"

extern "C" const char* dp_version(void) { return DP_VERSION_STRING; }
