#include "dp/torchstore/rendezvous_state.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <unordered_map>

#include "dp/pickle.hpp"

namespace dp::torchstore {
namespace {

constexpr size_t kDatetimeBytes = 10;
// 2000-01-01 00:00:00.000000: older than any keep-alive.
constexpr char kAncient[kDatetimeBytes] = {0x07, static_cast<char>(0xd0), 1, 1, 0, 0, 0, 0, 0, 0};

Error bad(const std::string& what) {
  return make_error(Errc::protocol, "torchrun's rendezvous state: " + what);
}

Result<std::string> from_base64(std::string_view in) {
  if (in.size() % 4 != 0) return bad("not base64 (its length is no multiple of 4)");
  std::string out(in.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  if (n < 0) return bad("not base64");
  // EVP_DecodeBlock counts the padding's bytes as zeros.
  size_t pad = 0;
  for (size_t i = in.size(); i > 0 && in[i - 1] == '=' && pad < 2; --i) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

std::string to_base64(std::string_view in) {
  std::string out((in.size() + 2) / 3 * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// A datetime object's own bytes: datetime.datetime(b'...'[, tzinfo]).
const pickle::Node* datetime_bytes(const pickle::Document& d, const pickle::Node& n) {
  if (d.type_name(n) != "datetime.datetime" || n.items.size() < 2) return nullptr;
  const pickle::Node& args = d.at(n.items[1]);
  if (args.items.empty()) return nullptr;
  const pickle::Node& b = d.at(args.items[0]);
  return b.kind == pickle::Kind::text && b.text.size() == kDatetimeBytes ? &b : nullptr;
}

// The 10 bytes compared as a time: the fold bit of the month byte aside.
std::string as_time(std::string s) {
  if (s.size() == kDatetimeBytes) s[2] = static_cast<char>(s[2] & 0x7f);
  return s;
}

}  // namespace

bool is_rendezvous_state_key(std::string_view key) {
  const size_t slash = key.rfind('/');
  if (slash != std::string_view::npos) key.remove_prefix(slash + 1);
  return key.size() > kRendezvousStatePrefix.size() &&
         key.substr(0, kRendezvousStatePrefix.size()) == kRendezvousStatePrefix;
}

std::string Launcher::name() const {
  std::string s = host + ":" + std::to_string(pid);
  if (local_id != 0) s += "." + std::to_string(local_id);
  return s;
}

Result<RendezvousState> read_rendezvous_state(std::string_view value) {
  RendezvousState st;
  auto raw = from_base64(value);
  if (!raw) return raw.error();
  st.pickle = std::move(*raw);
  if (st.pickle == "canimadam") return st;  // torchrun's null sentinel: no round yet
  pickle::Limits limits;
  limits.objects = true;
  auto doc = pickle::parse(st.pickle, limits);
  if (!doc) return bad(doc.error().message);
  const pickle::Node& root = doc->root();
  if (doc->type_name(root).find("_RendezvousState") == std::string_view::npos)
    return bad("the pickle holds no _RendezvousState");
  const pickle::Node* beats = doc->get(root, "last_heartbeats");
  if (!beats || beats->kind != pickle::Kind::dict) return bad("no last_heartbeats");
  for (size_t i = 0; i + 1 < beats->items.size(); i += 2) {
    const pickle::Node& desc = doc->at(beats->items[i]);
    const pickle::Node* host = doc->get(desc, "addr");
    if (!host) host = doc->get(desc, "fqdn");
    const pickle::Node* pid = doc->get(desc, "pid");
    const pickle::Node* local = doc->get(desc, "local_id");
    const pickle::Node* when = datetime_bytes(*doc, doc->at(beats->items[i + 1]));
    if (!host || host->kind != pickle::Kind::text || !pid || pid->kind != pickle::Kind::integer ||
        !when)
      return bad("a heartbeat whose launcher or time is not a _NodeDesc and a datetime");
    Launcher l;
    l.host = host->text;
    l.pid = pid->integer;
    l.local_id = local && local->kind == pickle::Kind::integer ? local->integer : 0;
    l.heartbeat = when->text;
    l.heartbeat_at = when->offset;
    st.launchers.push_back(std::move(l));
  }
  return st;
}

std::vector<Launcher> heartbeats_moved(const RendezvousState& prev, const RendezvousState& next) {
  std::unordered_map<std::string, std::string> before;
  for (const Launcher& l : prev.launchers) before[l.name()] = as_time(l.heartbeat);
  std::vector<Launcher> moved;
  for (const Launcher& l : next.launchers) {
    const auto it = before.find(l.name());
    if (it == before.end() || as_time(l.heartbeat) > it->second) moved.push_back(l);
  }
  return moved;
}

std::string with_heartbeats_expired(const RendezvousState& state,
                                    const std::vector<std::string>& names, int& expired) {
  expired = 0;
  std::unordered_map<uint32_t, int> uses;  // a memo may hand one bytes object to two datetimes
  for (const Launcher& l : state.launchers) ++uses[l.heartbeat_at];
  std::string edited = state.pickle;
  for (const Launcher& l : state.launchers) {
    if (std::find(names.begin(), names.end(), l.name()) == names.end()) continue;
    if (uses[l.heartbeat_at] != 1 || l.heartbeat_at + kDatetimeBytes > edited.size()) continue;
    std::copy(kAncient, kAncient + kDatetimeBytes, edited.begin() + l.heartbeat_at);
    ++expired;
  }
  return to_base64(edited);
}

}  // namespace dp::torchstore
