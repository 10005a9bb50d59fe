// Prints the table of settings (dp/params.hpp), one per line:
// NAME FORMS DEFAULT MEANING. The man-page test reads the names from it.
#include <cstdio>
#include <string>

#include "dp/params.hpp"

int main() {
  for (const auto& p : dp::param_specs()) {
    const std::string def = p.integer ? std::to_string(p.def) : "-";
    std::printf("%.*s %.*s %s %.*s\n", static_cast<int>(p.name.size()), p.name.data(),
                static_cast<int>(p.forms.size()), p.forms.data(), def.c_str(),
                static_cast<int>(p.meaning.size()), p.meaning.data());
  }
}
