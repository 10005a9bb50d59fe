#include "reply_reader.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <new>

#include "dp/shown_value.hpp"
#include "hello_proof.hpp"

namespace dp::rdv {

Result<void> validate(const proto::Response& r) {
  if (!proto::Code_IsValid(r.code())) {
    return make_error(Errc::protocol,
                      "reply with unknown code " + std::to_string(static_cast<int>(r.code())));
  }
  if (!r.challenge().empty() && (r.id() != 0 || r.challenge().size() != kNonceBytes)) {
    return make_error(Errc::protocol, "challenge of " + std::to_string(r.challenge().size()) +
                                          " bytes (expected " + std::to_string(kNonceBytes) +
                                          " in a push)");
  }
  if (r.id() == 0 && r.code() != proto::OK && r.code() != proto::ABORTED &&
      r.code() != proto::LIMIT && r.code() != proto::TIMEOUT && r.code() != proto::PROTOCOL &&
      r.code() != proto::UNAUTHORIZED) {
    return make_error(Errc::protocol,
                      "unexpected push with code " + std::to_string(static_cast<int>(r.code())));
  }
  return {};
}

Result<std::optional<proto::Response>> ReplyReader::parse_one() {
  std::string_view payload;
  const auto st = decoder_.next(payload);
  if (st == FrameDecoder::Status::need_more) {
    decoder_.shrink_if_idle();
    return std::optional<proto::Response>();
  }
  if (st == FrameDecoder::Status::too_large) {
    return make_error(Errc::protocol,
                      "oversized reply frame: " + std::to_string(decoder_.frame_length()) +
                          " bytes exceeds this client's limit of " + std::to_string(max_) +
                          " bytes");
  }
  proto::Response r;
  if (!r.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return make_error(Errc::protocol, "malformed reply frame");
  }
  DP_TRY(validate(r));
  if (!r.message().empty()) r.set_message(shown_value(r.message(), 1024));
  return std::optional<proto::Response>(std::move(r));
}

Result<void> ReplyReader::feed(const char* data, size_t n) noexcept {
  try {
    decoder_.feed(data, n);
    return {};
  } catch (const std::bad_alloc&) {
    return make_error(Errc::internal, "out of memory while reading a reply");
  } catch (...) {
    return make_error(Errc::internal, "unexpected failure while reading a reply");
  }
}

Result<std::optional<proto::Response>> ReplyReader::next() noexcept {
  try {
    return parse_one();
  } catch (const std::bad_alloc&) {
    return make_error(Errc::internal, "out of memory while reading a reply");
  } catch (...) {
    return make_error(Errc::internal, "unexpected failure while reading a reply");
  }
}

Result<proto::Response> read_reply(int fd, ReplyReader& reader, Deadline deadline, const char* what,
                                   const char* peer) {
  char buf[4096];
  for (;;) {
    auto next = reader.next();
    if (!next)
      return make_error(Errc::protocol,
                        std::string("bad ") + what + " from " + peer + ": " + next.error().message);
    if (*next) return std::move(**next);
    pollfd p{fd, POLLIN, 0};
    const int pr = poll(&p, 1, ms_until(deadline));
    if (pr == 0) return make_error(Errc::timeout, std::string("no ") + what + " from " + peer);
    if (pr < 0) {
      if (errno == EINTR) continue;
      return make_error(Errc::connection, std::string("poll failed while waiting for the ") + what);
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0)
      return make_error(Errc::connection,
                        std::string(peer) + " closed the connection before the " + what);
    DP_TRY(reader.feed(buf, static_cast<size_t>(n)));
  }
}

}  // namespace dp::rdv
