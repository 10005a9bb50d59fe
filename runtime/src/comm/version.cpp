#include "dp/dp.h"

extern "C" const char* dp_version(void) { return "0.1.0"; }
