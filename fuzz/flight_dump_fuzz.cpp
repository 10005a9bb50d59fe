// libFuzzer target: a flight-recorder dump as a node agent reads it from a
// rank's file (stacks/flight_recorder.hpp, over core's dp/pickle.hpp). Any bytes:
// never a crash, nothing past the pickle's bounds, every index of the
// document inside it; a dump that reads is placed, judged with a copy of
// itself as a second rank, and its ranks' text read back. The first input
// byte picks the bounds: the defaults, or small ones that bind; its second
// bit also takes classes as records (torchrun's rendezvous state), where a
// record's attribute is looked up on every object.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dp/pickle.hpp"
#include "dp/stacks/flight_recorder.hpp"

namespace {

void check_document(const dp::pickle::Document& d) {
  for (size_t i = 0; i < d.size(); ++i)
    for (uint32_t item : d.at(static_cast<uint32_t>(i)).items)
      if (item >= d.size()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  dp::pickle::Limits limits;
  if (data[0] & 1) limits = {4096, 64, 32, 128};
  limits.objects = (data[0] & 2) != 0;
  if (auto doc = dp::pickle::parse(in, limits)) {
    if (doc->size() > limits.max_nodes) std::abort();
    check_document(*doc);
    for (size_t i = 0; i < doc->size(); ++i) {
      const auto& n = doc->at(static_cast<uint32_t>(i));
      (void)doc->get(n, "last_heartbeats");
      (void)doc->type_name(n);
      if (n.kind == dp::pickle::Kind::text && n.offset + n.text.size() > in.size()) std::abort();
    }
  }
  auto dump = dp::stacks::read_flight_dump(in);
  if (dump) {
    dp::stacks::RankFlight a{0, "n1", 1, "", dp::stacks::group_places(*dump, 1), {}};
    a.arrivals = dp::stacks::recent_arrivals(*dump, 64);
    dp::stacks::RankFlight b = a;
    b.rank = 1;
    for (auto& g : b.groups) g.last_enqueued -= 1;
    (void)dp::stacks::flight_hang({a, b}, std::chrono::milliseconds(0));
    for (const auto& l : dp::stacks::late_ranks({a, b}))
      if (l.last > l.seen) std::abort();
  }
  (void)dp::stacks::parse_rank_ranges(in.substr(0, 64), 1024);
  return 0;
}
