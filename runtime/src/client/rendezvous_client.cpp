// Placeholder until the rendezvous client lands (issue 4).
#include "dp/result.hpp"
