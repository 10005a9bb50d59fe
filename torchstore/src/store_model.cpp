#include "dp/torchstore/store_model.hpp"

#include <algorithm>

#include "dp/torchstore/reply.hpp"

namespace dp::torchstore {

Outcome StoreModel::apply(ConnId conn, const Request& r) {
  Outcome out;
  auto reply = [&](std::string bytes) { out.replies.push_back({conn, std::move(bytes)}); };
  switch (r.op) {
    case Op::validate: break;  // the parser checked the magic; no answer
    case Op::ping: reply(encode_ping(r.number)); break;
    case Op::set: set(r.key, r.value, out); break;
    case Op::append: set(r.key, value(r.key).value_or("") + r.value, out); break;
    case Op::multi_set:
      for (size_t i = 0; i < r.keys.size(); ++i) set(r.keys[i], r.values[i], out);
      break;
    case Op::compare_set: compare_set(r, conn, out); break;
    case Op::get:
    case Op::multi_get: get(r, conn, out); break;
    case Op::add: add(r, conn, out); break;
    case Op::check: {
      const bool ready = std::all_of(r.keys.begin(), r.keys.end(),
                                     [&](const std::string& k) { return present(k); });
      reply(encode_check(ready ? CheckAnswer::ready : CheckAnswer::not_ready));
      break;
    }
    case Op::wait: wait(r, conn, out); break;
    case Op::cancel_wait:
      disconnect_waits(conn);
      reply(encode_wait(WaitAnswer::wait_canceled));
      break;
    case Op::get_num_keys: reply(encode_int64(static_cast<int64_t>(kv_.size()))); break;
    case Op::delete_key: delete_key(r, conn, out); break;
    case Op::watch_key:
      watchers_[r.key].push_back(conn);
      reply(encode_watch_registered());
      break;
    case Op::queue_push: queue_push(r, out); break;
    case Op::queue_pop: queue_pop(r, conn, out); break;
    case Op::queue_len: reply(encode_int64(static_cast<int64_t>(queue_length(r.key)))); break;
  }
  return out;
}

void StoreModel::disconnect(ConnId conn) {
  disconnect_waits(conn);
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    std::erase(it->second, conn);
    it = it->second.empty() ? watchers_.erase(it) : std::next(it);
  }
}

void StoreModel::disconnect_waits(ConnId conn) {
  awaited_.erase(conn);
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    std::erase(it->second, conn);
    it = it->second.empty() ? waiters_.erase(it) : std::next(it);
  }
}

std::optional<std::string> StoreModel::value(std::string_view key) const {
  const auto it = kv_.find(std::string(key));
  if (it == kv_.end()) return std::nullopt;
  return it->second;
}

size_t StoreModel::queue_length(std::string_view key) const {
  const auto it = queues_.find(std::string(key));
  return it == queues_.end() ? 0 : it->second.size();
}

void StoreModel::set(const std::string& key, std::string v, Outcome& out) {
  auto old = value(key);
  auto& slot = kv_[key];
  slot = std::move(v);
  wake(key, out);
  watched(key, std::move(old), &slot, out);
}

void StoreModel::add(const Request& r, ConnId conn, Outcome& out) {
  int64_t sum = r.delta;
  auto old = value(r.key);
  if (old) {
    const auto stored = parse_like_stoll(*old);
    if (!stored) {
      out.close = "ADD to a value that is not a decimal int64 (std::stoll throws)";
      return;
    }
    // Wraps as the server's int64 addition does in practice.
    sum = static_cast<int64_t>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(*stored));
  }
  auto& slot = kv_[r.key];
  slot = std::to_string(sum);
  out.replies.push_back({conn, encode_int64(sum)});
  wake(r.key, out);
  watched(r.key, std::move(old), &slot, out);
}

void StoreModel::compare_set(const Request& r, ConnId conn, Outcome& out) {
  auto it = kv_.find(r.key);
  std::string answer;
  if (it == kv_.end()) {
    // An expected value for a missing key is answered back, unchanged:
    // PyTorch's own "lying to the caller" (a TODO in its server).
    answer = r.expected;
    if (r.expected.empty()) {
      it = kv_.emplace(r.key, r.value).first;
      answer = r.value;
      watched(r.key, std::nullopt, &it->second, out);
    }
  } else {
    if (it->second == r.expected) {
      auto old = it->second;
      it->second = r.value;
      watched(r.key, std::move(old), &it->second, out);
    }
    answer = it->second;
  }
  out.replies.push_back({conn, encode_value(answer)});
  if (kind_ == ServerKind::libuv) wake(r.key, out);
}

void StoreModel::get(const Request& r, ConnId conn, Outcome& out) {
  const bool multi = r.op == Op::multi_get;
  std::string bytes;
  for (const auto& key : multi ? r.keys : std::vector<std::string>{r.key}) {
    const auto v = value(key);
    if (!v && kind_ == ServerKind::classic) {
      // The classic server's tcpStore_.at() throws: what it sent goes out,
      // then the connection closes.
      if (!bytes.empty()) out.replies.push_back({conn, std::move(bytes)});
      out.close = std::string(multi ? "MULTI_GET" : "GET") + " of a key that does not exist";
      return;
    }
    bytes += encode_value(v.value_or(""));
  }
  out.replies.push_back({conn, std::move(bytes)});
}

void StoreModel::wait(const Request& r, ConnId conn, Outcome& out) {
  if (std::all_of(r.keys.begin(), r.keys.end(), [&](const std::string& k) { return present(k); })) {
    out.replies.push_back({conn, encode_wait(WaitAnswer::stop_waiting)});
    return;
  }
  size_t missing = 0;
  for (const auto& key : r.keys) {
    if (kv_.count(key)) continue;
    waiters_[key].push_back(conn);
    ++missing;
  }
  awaited_[conn] = missing;
}

void StoreModel::delete_key(const Request& r, ConnId conn, Outcome& out) {
  auto old = value(r.key);
  kv_.erase(r.key);
  out.replies.push_back({conn, encode_int64(old ? 1 : 0)});
  if (old) watched(r.key, std::move(old), nullptr, out);
}

void StoreModel::queue_push(const Request& r, Outcome& out) {
  queues_[r.key].push_back(r.value);
  wake_one(r.key, out);
}

void StoreModel::queue_pop(const Request& r, ConnId conn, Outcome& out) {
  auto& q = queues_[r.key];
  const auto length = static_cast<int64_t>(q.size());
  std::optional<std::string> popped;
  if (!q.empty()) {
    popped = std::move(q.front());
    q.pop_front();
  }
  out.replies.push_back({conn, encode_queue_pop(length, popped)});
}

bool StoreModel::present(const std::string& key) const {
  return kv_.count(key) > 0 || (kind_ == ServerKind::libuv && queue_length(key) > 0);
}

void StoreModel::wake(const std::string& key, Outcome& out) {
  const auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  for (ConnId conn : it->second) {
    auto left = awaited_.find(conn);
    if (left == awaited_.end() || --left->second > 0) continue;
    awaited_.erase(left);
    out.replies.push_back({conn, encode_wait(WaitAnswer::stop_waiting)});
  }
  waiters_.erase(it);
}

// A queue push ends one wait, the first in line it completes; the waits it
// passes on the way count the key as set, once (libuv's server counts them
// again on the next push, which only delays their answer).
void StoreModel::wake_one(const std::string& key, Outcome& out) {
  const auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  auto& line = it->second;
  while (!line.empty()) {
    const ConnId conn = line.front();
    line.erase(line.begin());
    auto left = awaited_.find(conn);
    if (left == awaited_.end() || --left->second > 0) continue;
    awaited_.erase(left);
    out.replies.push_back({conn, encode_wait(WaitAnswer::stop_waiting)});
    break;
  }
  if (line.empty()) waiters_.erase(it);
}

// The legacy server tells every connection that watches the key.
void StoreModel::watched(const std::string& key, std::optional<std::string> old_value,
                         const std::string* now, Outcome& out) {
  const auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  const WatchEvent e = !now        ? WatchEvent::key_deleted
                       : old_value ? WatchEvent::key_updated
                                   : WatchEvent::key_created;
  for (ConnId conn : it->second)
    out.replies.push_back(
        {conn, encode_watch_event(e, key, old_value.value_or(""), now ? *now : std::string())});
}

std::optional<int64_t> parse_like_stoll(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || (text[i] >= '\t' && text[i] <= '\r'))) ++i;
  const bool negative = i < text.size() && text[i] == '-';
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  const size_t first_digit = i;
  // Accumulated as a negative number, whose range holds INT64_MIN.
  int64_t n = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const int digit = text[i] - '0';
    if (n < (INT64_MIN + digit) / 10) return std::nullopt;
    n = n * 10 - digit;
  }
  if (i == first_digit) return std::nullopt;
  if (negative) return n;
  if (n == INT64_MIN) return std::nullopt;
  return -n;
}

}  // namespace dp::torchstore
