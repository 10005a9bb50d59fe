#include "dp/params.hpp"
#include "dp/shown_value.hpp"

#include <array>
#include <charconv>
#include <cstdlib>
#include <string>
#include <type_traits>

namespace dp {

namespace {

// One implementation for both widths the callers need.
template <class T>
Result<T> whole_number(std::string_view text, T min, T max) {
  auto bad = [](std::string why) { return make_error(Errc::invalid_argument, std::move(why)); };
  if (text.empty()) return bad("empty value");
  // from_chars accepts a leading '-', never '+' or spaces; say so explicitly.
  if (text.front() == '+' || text.front() == ' ') return bad("not a whole number");
  T n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec == std::errc::result_out_of_range) return bad("too large");
  if (ec != std::errc() || end == text.data()) return bad("not a whole number");
  if (end != text.data() + text.size())
    return bad("unexpected '" +
               shown_value(std::string_view(end, text.data() + text.size() - end)) +
               "' after the number");
  if constexpr (std::is_signed_v<T>) {
    if (n < 0 && min >= 0) return bad("negative");
  }
  if (n == 0 && min > 0) return bad("zero");
  if (n < min || n > max) return bad("out of range");
  return n;
}

}  // namespace

Result<long long> parse_whole_number(std::string_view text, long long min, long long max) {
  return whole_number(text, min, max);
}

Result<unsigned long long> parse_whole_number_u64(std::string_view text, unsigned long long min,
                                                  unsigned long long max) {
  return whole_number(text, min, max);
}

Result<long long> parse_integer(std::string_view text, long long min, long long max,
                                std::string_view what, std::string_view example) {
  auto n = parse_whole_number(text, min, max);
  if (n) return n;
  const std::string fix = "use a whole number from " + std::to_string(min) + " to " +
                          std::to_string(max) + ", e.g. " + std::string(what) + "=" +
                          std::string(example);
  if (text.empty())
    return make_error(Errc::invalid_argument, std::string(what) + ": empty value; " + fix);
  return make_error(Errc::invalid_argument, std::string(what) + "=" + shown_value(text) + ": " +
                                                n.error().message + "; " + fix);
}

Result<long long> parse_env_integer(std::string_view name, std::string_view text, long long min,
                                    long long max) {
  auto n = parse_whole_number(text, min, max);
  if (n) return n;
  return make_error(Errc::invalid_argument, std::string(name) + "='" + shown_value(text) +
                                                "' is not an integer in [" + std::to_string(min) +
                                                ", " + std::to_string(max) + "] (" +
                                                n.error().message + "); fix or unset the variable");
}

namespace {

constexpr ParamSpec kSpecs[] = {
#define DP_PARAM_INT(id, name, def, min, max, meaning) \
  {name, #min ".." #max, def, min, max, meaning, true},
    DP_INTEGER_PARAMS(DP_PARAM_INT)
#undef DP_PARAM_INT
#define DP_PARAM_TEXT(name, forms, meaning) {name, forms, 0, 0, 0, meaning, false},
        DP_TEXT_PARAMS(DP_PARAM_TEXT)
#undef DP_PARAM_TEXT
};

constexpr size_t kIntegerCount = 0
#define DP_PARAM_COUNT(...) +1
    DP_INTEGER_PARAMS(DP_PARAM_COUNT)
#undef DP_PARAM_COUNT
    ;

const char* env_text(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

std::span<const ParamSpec> param_specs() { return kSpecs; }

const ParamSpec& param_spec(Param p) { return kSpecs[static_cast<size_t>(p)]; }

Result<long long> parse_param(Param p, std::string_view text) {
  const ParamSpec& s = param_spec(p);
  return parse_env_integer(s.name, text, s.min, s.max);
}

long long param(Param p) {
  static const std::array<long long, kIntegerCount> values = [] {
    std::array<long long, kIntegerCount> v{};
    for (size_t i = 0; i < kIntegerCount; ++i) {
      const char* text = env_text(kSpecs[i].name);
      auto n = text ? parse_param(static_cast<Param>(i), text) : Result<long long>(kSpecs[i].def);
      v[i] = n ? *n : kSpecs[i].def;
    }
    return v;
  }();
  return values[static_cast<size_t>(p)];
}

Result<void> check_params() {
  for (size_t i = 0; i < kIntegerCount; ++i) {
    if (const char* text = env_text(kSpecs[i].name))
      DP_TRY(parse_param(static_cast<Param>(i), text));
  }
  return {};
}

std::string describe_params() {
  std::string out;
  for (size_t i = 0; i < std::size(kSpecs); ++i) {
    const ParamSpec& s = kSpecs[i];
    if (s.integer) {
      const long long v = param(static_cast<Param>(i));
      out += std::string(s.name) + "=" + std::to_string(v);
      if (v != s.def) out += " (default " + std::to_string(s.def) + ")";
    } else if (const char* text = env_text(s.name)) {
      out += std::string(s.name) + "=" + (s.name == "DP_RDV_SECRET" ? "(set)" : text);
    } else {
      continue;
    }
    out += '\n';
  }
  return out;
}

}  // namespace dp
