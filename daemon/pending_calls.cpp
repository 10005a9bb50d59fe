#include "pending_calls.hpp"

#include <algorithm>

#include "dp/duration_text.hpp"
#include "dp/shown_value.hpp"

namespace dp::daemon {
namespace {

template <class V, class T>
void erase_value(V& v, const T& x) {
  v.erase(std::remove(v.begin(), v.end(), x), v.end());
}

}  // namespace

const Waiter* PendingCalls::find(uint64_t id) const {
  auto it = calls_.find(id);
  return it == calls_.end() ? nullptr : &it->second;
}

std::vector<uint64_t> PendingCalls::ids() const {
  std::vector<uint64_t> out;
  out.reserve(calls_.size());
  for (const auto& [id, w] : calls_) out.push_back(id);
  return out;
}

std::vector<uint64_t> PendingCalls::of_conn(ConnId conn) const {
  auto it = by_conn_.find(conn);
  return it == by_conn_.end() ? std::vector<uint64_t>{} : it->second;
}

uint64_t PendingCalls::index(Waiter w) {
  const uint64_t id = next_++;
  if (w.timeout.count() > 0) deadlines_.emplace(w.deadline(), id);
  by_conn_[w.conn].push_back(id);
  calls_.emplace(id, std::move(w));
  return id;
}

uint64_t PendingCalls::add(Waiter w) {
  auto& keys = by_key(w.space);
  for (const auto& k : w.keys) keys[k].push_back(next_);  // the id index() gives it
  return index(std::move(w));
}

std::optional<PendingCalls::Arrival> PendingCalls::arrive(Waiter w, int* twice) {
  const std::string name = w.keys.front();
  auto found = barriers_.find(name);
  if (found != barriers_.end()) {
    for (int r : w.ranks) {
      if (found->second.arrived[static_cast<size_t>(r)]) {
        if (twice) *twice = r;
        return std::nullopt;
      }
    }
  }
  Barrier& b = barriers_[name];
  if (b.arrived.empty()) b.arrived.assign(static_cast<size_t>(world_), 0);
  for (int r : w.ranks) b.arrived[static_cast<size_t>(r)] = 1;
  b.count += static_cast<int>(w.ranks.size());
  Arrival a;
  a.id = index(std::move(w));
  b.calls.push_back(a.id);
  if (b.count == world_) {
    a.complete = std::move(b.calls);
    barriers_.erase(name);  // closed: taking its calls undoes no arrival
  }
  return a;
}

std::optional<std::string> PendingCalls::barrier_progress(const std::string& name) const {
  auto it = barriers_.find(name);
  if (it == barriers_.end()) return std::nullopt;
  const Barrier& b = it->second;
  std::string missing;
  int shown = 0;
  for (int r = 0; r < world_ && shown < 8; ++r) {
    if (b.arrived[static_cast<size_t>(r)]) continue;
    missing += (shown ? "," : "") + std::to_string(r);
    ++shown;
  }
  if (world_ - b.count > shown) missing += ",...";
  return std::to_string(b.count) + " of " + std::to_string(world_) +
         " ranks arrived; missing ranks " + missing;
}

std::optional<Waiter> PendingCalls::take(uint64_t id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return std::nullopt;
  Waiter w = std::move(it->second);
  calls_.erase(it);
  if (w.timeout.count() > 0) {
    auto [lo, hi] = deadlines_.equal_range(w.deadline());
    for (auto d = lo; d != hi; ++d) {
      if (d->second == id) {
        deadlines_.erase(d);
        break;
      }
    }
  }
  if (auto c = by_conn_.find(w.conn); c != by_conn_.end()) {
    erase_value(c->second, id);
    if (c->second.empty()) by_conn_.erase(c);
  }
  if (w.kind == WaitKind::barrier) {
    if (auto b = barriers_.find(w.keys.front()); b != barriers_.end()) {
      erase_value(b->second.calls, id);
      for (int r : w.ranks) {  // this call's arrivals taken back
        if (!b->second.arrived[static_cast<size_t>(r)]) continue;
        b->second.arrived[static_cast<size_t>(r)] = 0;
        --b->second.count;
      }
      if (b->second.count == 0) barriers_.erase(b);
    }
    return w;
  }
  auto& keys = by_key(w.space);
  for (const auto& k : w.keys) {
    auto kw = keys.find(k);
    if (kw == keys.end()) continue;
    erase_value(kw->second, id);
    if (kw->second.empty()) keys.erase(kw);
  }
  return w;
}

std::vector<uint64_t> PendingCalls::key_set(proto::Space space, const std::string& key,
                                            const std::function<bool(const std::string&)>& is_set) {
  auto& keys = by_key(space);
  auto it = keys.find(key);
  if (it == keys.end()) return {};
  std::vector<uint64_t> waiting = std::move(it->second);
  keys.erase(it);
  std::vector<uint64_t> done;
  for (uint64_t id : waiting) {
    auto w = calls_.find(id);
    if (w == calls_.end()) continue;
    if (w->second.kind == WaitKind::get) {
      done.push_back(id);
      continue;
    }
    auto& left = w->second.keys;
    if (w->second.value) {  // one key, kept for its value
      if (is_set(left.front())) done.push_back(id);
      continue;
    }
    left.erase(std::remove_if(left.begin(), left.end(), is_set), left.end());
    if (left.empty()) done.push_back(id);
  }
  return done;
}

std::optional<uint64_t> PendingCalls::next_due(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const uint64_t id = deadlines_.begin()->second;
    if (calls_.count(id)) return id;
    deadlines_.erase(deadlines_.begin());
  }
  return std::nullopt;
}

std::optional<std::string> PendingCalls::refusal(const std::string* new_barrier) const {
  if (static_cast<long long>(calls_.size()) >= max_calls_)
    return "too many blocking calls pending in the step (limit " + std::to_string(max_calls_) +
           ", dp-rendezvousd --max-pending-calls); retry when some are answered";
  if (new_barrier && !has_barrier(*new_barrier) &&
      static_cast<int>(barriers_.size()) >= max_barriers_)
    return "too many barriers open at once in the step (limit " + std::to_string(max_barriers_) +
           ", dp-rendezvousd --max-open-barriers): are barrier names unique per call?";
  return std::nullopt;
}

std::string PendingCalls::timeout_message(const Waiter& w) const {
  switch (w.kind) {
    case WaitKind::get:
      return "get " + shown_key(w.keys.front()) + " timed out after " + ms_text(w.timeout) +
             ": no peer set the key; check that the publishing rank is running";
    case WaitKind::wait:
      return "wait timed out after " + ms_text(w.timeout) + ": " + std::to_string(w.keys.size()) +
             " key(s) still missing, first " + shown_key(w.keys.front());
    case WaitKind::barrier: break;
  }
  std::string msg =
      "barrier " + shown_key(w.keys.front()) + " timed out after " + ms_text(w.timeout);
  if (auto progress = barrier_progress(w.keys.front())) msg += ": " + *progress;
  return msg;
}

}  // namespace dp::daemon
