// Ranks as a person reads them: "0-2,5,7-9" from ascending ranks. One
// spelling for the merged stacks, the hang and the straggler verdicts.
#pragma once

#include <string>
#include <vector>

namespace dp {

std::string rank_ranges(const std::vector<int>& ranks);

}  // namespace dp
