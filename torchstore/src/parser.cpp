#include "dp/torchstore/parser.hpp"

#include <span>

#include "dp/shown_value.hpp"
#include "dp/torchstore/dialect.hpp"
#include "wire.hpp"

namespace dp::torchstore {
namespace {

enum class Field : uint8_t { key, value, expected, delta, number, key_list, pair_list };

// The fields of each request, in wire order.
std::span<const Field> fields_of(Op op) {
  static constexpr Field kNumber[] = {Field::number};
  static constexpr Field kKeyValue[] = {Field::key, Field::value};
  static constexpr Field kCompareSet[] = {Field::key, Field::expected, Field::value};
  static constexpr Field kAdd[] = {Field::key, Field::delta};
  static constexpr Field kKey[] = {Field::key};
  static constexpr Field kKeyList[] = {Field::key_list};
  static constexpr Field kPairList[] = {Field::pair_list};
  switch (op) {
    case Op::validate:
    case Op::ping: return kNumber;
    case Op::set:
    case Op::append:
    case Op::queue_push: return kKeyValue;
    case Op::compare_set: return kCompareSet;
    case Op::add: return kAdd;
    case Op::get:
    case Op::watch_key:
    case Op::delete_key:
    case Op::queue_pop:
    case Op::queue_len: return kKey;
    case Op::check:
    case Op::wait:
    case Op::multi_get: return kKeyList;
    case Op::multi_set: return kPairList;
    case Op::get_num_keys:
    case Op::cancel_wait: break;
  }
  return {};
}

const char* blob_name(Field f) {
  return f == Field::key ? "key" : f == Field::expected ? "expected value" : "value";
}

std::string& blob_slot(Request& r, Field f) {
  return f == Field::key ? r.key : f == Field::expected ? r.expected : r.value;
}

}  // namespace

Result<void> RequestParser::feed(std::string_view bytes) {
  if (failed_) return *failed_;
  if (buffered() + bytes.size() > limits_.buffered_bytes)
    return fail(Errc::limit, "more than " + std::to_string(limits_.buffered_bytes) +
                                 " bytes of input held unparsed");
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
  return {};
}

Result<std::optional<Request>> RequestParser::next() {
  if (failed_) return *failed_;
  if (!dialect_) {
    auto known = detect();
    if (!known) return known.error();
    if (!*known) return std::optional<Request>();
  }
  if (!pending_) {
    auto started = start_request();
    if (!started) return started.error();
    if (!*started) return std::optional<Request>();
  }
  const auto fields = fields_of(pending_->req.op);
  while (pending_->field < fields.size()) {
    auto done = read_field();
    if (!done) return done.error();
    if (!*done) return std::optional<Request>();
  }
  std::optional<Request> whole(std::move(pending_->req));
  pending_.reset();
  return whole;
}

Result<bool> RequestParser::detect() {
  auto d = detect_dialect(unread().substr(0, kDialectBytes), limits_.key_bytes);
  if (!d) {
    failed_ = d.error();
    return *failed_;
  }
  if (*d == Detection::need_more) return false;
  dialect_ = *d == Detection::v2 ? Dialect::v2 : Dialect::legacy;
  return true;
}

Result<bool> RequestParser::start_request() {
  if (unread().empty()) return false;
  const auto byte = static_cast<uint8_t>(unread()[0]);
  const auto op = op_from_byte(*dialect_, byte);
  pending_ = Pending{};
  pending_->byte = byte;
  if (!op) return fail(Errc::protocol, describe_opcode(*dialect_, byte));
  pending_->req.op = *op;
  // A v2 connection opens with VALIDATE and the magic (detect() saw both)
  // and PyTorch's servers close one that sends it again.
  if (opened_ && *op == Op::validate)
    return fail(Errc::protocol, "VALIDATE after the connection's first request");
  opened_ = true;
  ++pos_;
  return true;
}

Result<bool> RequestParser::read_field() {
  auto& p = *pending_;
  const Field field = fields_of(p.req.op)[p.field];
  std::optional<bool> done;
  if (field == Field::key_list || field == Field::pair_list) {
    auto listed = read_list(field == Field::pair_list);
    if (!listed) return listed.error();
    done = *listed;
  } else if (field == Field::delta) {
    auto v = take_fixed<int64_t>();
    if (v) p.req.delta = *v;
    done = v.has_value();
  } else if (field == Field::number) {
    auto v = take_fixed<uint32_t>();
    if (v) p.req.number = *v;
    done = v.has_value();
  } else {
    // A value's key came first: its refusal names it.
    const std::string* of = field == Field::key ? nullptr : &p.req.key;
    auto blob = take_blob(blob_name(field),
                          field == Field::key ? limits_.key_bytes : limits_.value_bytes, of);
    if (!blob) return blob.error();
    if (*blob) blob_slot(p.req, field) = std::move(**blob);
    done = blob->has_value();
  }
  if (*done) ++p.field;
  return *done;
}

// A key count, then that many keys (or key-value pairs for MULTI_SET).
Result<bool> RequestParser::read_list(bool pairs) {
  auto& p = *pending_;
  if (!p.have_count) {
    auto n = take_fixed<uint64_t>();
    if (!n) return false;
    if (*n > limits_.keys)
      return fail(Errc::limit, "key count " + std::to_string(*n) + " is over the limit of " +
                                   std::to_string(limits_.keys));
    // Each key takes at least its 8-byte length (a pair, 16): refuse now a
    // count that cannot fit in a request.
    if (p.bytes + *n * (pairs ? 16 : 8) > limits_.request_bytes)
      return fail(Errc::limit, std::to_string(*n) + " keys cannot fit in a request of at most " +
                                   std::to_string(limits_.request_bytes) + " bytes");
    p.have_count = true;
    p.count = *n;
  }
  while (p.req.keys.size() < p.count || (pairs && p.req.values.size() < p.count)) {
    if (!pairs || !p.pair_key) {
      auto key = take_blob("key", limits_.key_bytes);
      if (!key) return key.error();
      if (!*key) return false;
      p.req.keys.push_back(std::move(**key));
      p.pair_key = pairs;
      continue;
    }
    auto value = take_blob("value", limits_.value_bytes, &p.req.keys.back());
    if (!value) return value.error();
    if (!*value) return false;
    p.req.values.push_back(std::move(**value));
    p.pair_key = false;
  }
  return true;
}

Result<std::optional<std::string>> RequestParser::take_blob(const char* field, size_t cap,
                                                            const std::string* key) {
  const auto in = unread();
  if (in.size() < sizeof(uint64_t)) return std::optional<std::string>();
  const auto len = wire::get<uint64_t>(in);
  const std::string of = key ? " for key " + shown_key(*key) : std::string();
  if (len > cap)
    return fail(Errc::limit, std::string(field) + " of " + std::to_string(len) + " bytes" + of +
                                 " is over the limit of " + std::to_string(cap) + " bytes");
  auto& p = *pending_;
  if (p.bytes + sizeof(uint64_t) + len > limits_.request_bytes)
    return fail(Errc::limit, std::string("the request is over the limit of ") +
                                 std::to_string(limits_.request_bytes) + " bytes at its " + field +
                                 of + " (" + std::to_string(len) + " bytes)");
  if (in.size() - sizeof(uint64_t) < len) {
    buf_.reserve(pos_ + sizeof(uint64_t) + len);  // an 8 MiB value in one piece of memory
    return std::optional<std::string>();
  }
  pos_ += sizeof(uint64_t) + len;
  p.bytes += sizeof(uint64_t) + len;
  return std::optional<std::string>(in.substr(sizeof(uint64_t), len));
}

template <class T>
std::optional<T> RequestParser::take_fixed() {
  const auto in = unread();
  if (in.size() < sizeof(T)) return std::nullopt;
  pos_ += sizeof(T);
  pending_->bytes += sizeof(T);
  return wire::get<T>(in);
}

Error RequestParser::fail(Errc code, const std::string& what) {
  std::string where = "torch store: ";
  if (dialect_) where = std::string("torch store (") + dialect_name(*dialect_) + "): ";
  if (dialect_ && pending_ && op_from_byte(*dialect_, pending_->byte))
    where += describe_opcode(*dialect_, pending_->byte) + ": ";
  failed_ = make_error(code, where + what + "; closing the connection");
  return *failed_;
}

}  // namespace dp::torchstore
