#include "dp/torchstore/request.hpp"

#include "wire.hpp"

namespace dp::torchstore {
namespace {

void put_keys(std::string& out, const std::vector<std::string>& keys) {
  wire::put<uint64_t>(out, keys.size());
  for (const auto& k : keys) wire::put_blob(out, k);
}

void put_body(std::string& out, const Request& r) {
  switch (op_info(r.op).body) {
    case Body::none: break;
    case Body::number: wire::put<uint32_t>(out, r.number); break;
    case Body::key: wire::put_blob(out, r.key); break;
    case Body::key_value:
      wire::put_blob(out, r.key);
      wire::put_blob(out, r.value);
      break;
    case Body::compare_set:
      wire::put_blob(out, r.key);
      wire::put_blob(out, r.expected);
      wire::put_blob(out, r.value);
      break;
    case Body::add:
      wire::put_blob(out, r.key);
      wire::put<int64_t>(out, r.delta);
      break;
    case Body::key_list: put_keys(out, r.keys); break;
    case Body::pair_list:
      wire::put<int64_t>(out, static_cast<int64_t>(r.keys.size()));  // PyTorch sends it signed
      for (size_t i = 0; i < r.keys.size(); ++i) {
        wire::put_blob(out, r.keys[i]);
        wire::put_blob(out, r.values[i]);
      }
      break;
  }
}

}  // namespace

Result<std::string> encode_request(Dialect d, const Request& r) {
  const auto byte = op_byte(d, r.op);
  if (!byte)
    return make_error(Errc::invalid_argument, std::string("torch store: ") + op_name(r.op) +
                                                  " does not exist in " + dialect_name(d));
  if (r.op == Op::multi_set && r.keys.size() != r.values.size())
    return make_error(Errc::invalid_argument, "torch store: MULTI_SET needs one value per key (" +
                                                  std::to_string(r.keys.size()) + " keys, " +
                                                  std::to_string(r.values.size()) + " values)");
  std::string out(1, static_cast<char>(*byte));
  put_body(out, r);
  return out;
}

bool announces_worker(const Request& r) {
  return r.op == Op::add && r.delta == 1 && r.key == "init/";
}

}  // namespace dp::torchstore
