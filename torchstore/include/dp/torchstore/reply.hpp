// The bytes PyTorch's own server sends back, one function per kind of answer.
// Which request gets which answer (and which gets none: SET, APPEND,
// MULTI_SET, QUEUE_PUSH, VALIDATE, and WAIT until its keys exist) is the
// store's business (store_model.hpp); these only frame.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/torchstore/opcodes.hpp"

namespace dp::torchstore {

// GET and COMPARE_SET: a uint64 length, then the value.
std::string encode_value(std::string_view value);
// MULTI_GET: each value as GET sends it, in the request's order.
std::string encode_values(const std::vector<std::string>& values);
// ADD (the new value), GETNUMKEYS, DELETE_KEY (keys deleted: 0 or 1), QUEUE_LEN.
std::string encode_int64(int64_t n);
// CHECK: one byte, READY (0) or NOT_READY (1).
std::string encode_check(CheckAnswer a);
// WAIT: STOP_WAITING (0) once every key exists; CANCEL_WAIT: WAIT_CANCELED (1).
std::string encode_wait(WaitAnswer a);
// PING: the client's uint32 nonce, echoed.
std::string encode_ping(uint32_t nonce);
// QUEUE_POP: the queue's length as an int64 before the pop, then, when it was
// not empty, the popped value as GET sends it.
std::string encode_queue_pop(int64_t length_before, const std::optional<std::string>& popped);
// The legacy server on a callback connection: WATCH_KEY's acknowledgement,
// one byte KEY_CALLBACK_REGISTERED (3) ...
std::string encode_watch_registered();
// ... and later, per change of the watched key: the event byte, the key as a
// string, the old value and the new one ("" where there is none).
std::string encode_watch_event(WatchEvent e, std::string_view key, std::string_view old_value,
                               std::string_view new_value);

}  // namespace dp::torchstore
