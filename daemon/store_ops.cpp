#include "store_ops.hpp"

#include <charconv>

#include "dp/shown_value.hpp"
#include "dp/torchstore/store_model.hpp"
#include "frame_codec.hpp"

namespace dp::daemon {
namespace {

std::optional<int64_t> strict_int64(const std::string& v) {
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || ptr != v.data() + v.size()) return std::nullopt;
  return n;
}

StoreOpDone add(KvStore& store, uint64_t id, proto::Space space, const proto::Add& m) {
  if (auto k = store.check_key(m.key()); !k) return store_refusal(id, k.error());
  const bool torch = space == proto::SPACE_TORCH;
  int64_t cur = 0;
  if (const std::string* v = store.find(space, m.key())) {
    std::optional<int64_t> n = torch ? torchstore::parse_like_stoll(*v) : strict_int64(*v);
    if (!n)
      return store_refusal(
          id, proto::INVALID_ARGUMENT,
          "add on key " + shown_key(m.key()) + ": its value is not a decimal integer");
    cur = *n;
  }
  int64_t next = 0;
  if (__builtin_add_overflow(cur, m.delta(), &next) && !torch)
    return store_refusal(id, proto::INVALID_ARGUMENT,
                         "add on key " + shown_key(m.key()) + " overflows int64");
  if (auto r = store.put(space, m.key(), std::to_string(next)); !r)
    return store_refusal(id, r.error());
  StoreOpDone d = store_answer(id);
  d.reply.set_number(next);
  d.changed.push_back(m.key());
  return d;
}

StoreOpDone erase(KvStore& store, uint64_t id, proto::Space space, const proto::Erase& m) {
  auto erased = store.erase(space, m.key());
  if (space == proto::SPACE_TORCH && (erased || erased.error().code == Errc::not_found)) {
    StoreOpDone d = store_answer(id);  // PyTorch's DELETE_KEY answers how many keys it removed
    d.reply.set_number(erased ? 1 : 0);
    return d;
  }
  if (!erased) return store_refusal(id, erased.error());
  return store_answer(id);
}

}  // namespace

StoreOpDone store_answer(uint64_t id) {
  StoreOpDone d;
  d.reply.set_id(id);
  return d;
}

StoreOpDone store_refusal(uint64_t id, proto::Code code, std::string message) {
  StoreOpDone d = store_answer(id);
  d.reply.set_code(code);
  d.reply.set_message(std::move(message));
  return d;
}

StoreOpDone store_refusal(uint64_t id, const Error& e) {
  return store_refusal(id, rdv::to_wire(e.code), e.message);
}

std::optional<StoreOpDone> store_op(KvStore& store, const proto::Request& req) {
  if (req.has_add()) return add(store, req.id(), req.space(), req.add());
  if (req.has_erase()) return erase(store, req.id(), req.space(), req.erase());
  if (!req.has_exists()) return std::nullopt;
  StoreOpDone d = store_answer(req.id());
  d.reply.set_flag(store.contains(req.space(), req.exists().key()));
  return d;
}

}  // namespace dp::daemon
