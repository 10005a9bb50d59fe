// Placeholder until the runtime lands (issue 5).
extern "C" const char* dp_version(void) { return "0.1.0"; }
