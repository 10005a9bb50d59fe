// A uid as messages name it, for errors that say whose a file, folder or
// port is (another user's squat must be named, not guessed).
#pragma once

#include <string>

namespace dp {

// "name (uid N)", or "uid N" when the uid has no name.
std::string user_text(unsigned uid);

}  // namespace dp
