// The shipped plugstack.conf.d snippet tells the truth: it documents exactly
// the keys the plugin's parser accepts, every default it documents is what
// the parser assumes, and every example plugin line is accepted by that
// parser. Reads the configured snippet.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "dp/site_config.hpp"

namespace {

std::vector<std::string> snippet_lines() {
  std::ifstream in(DP_SNIPPET_PATH);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// "#   key=value" lines: one documented default each.
std::vector<std::string> documented_defaults() {
  std::vector<std::string> out;
  const std::string mark = "#   ";
  for (const auto& line : snippet_lines()) {
    if (line.rfind(mark, 0) != 0 || line.size() <= mark.size() || line[mark.size()] == ' ')
      continue;
    const std::string word = line.substr(mark.size());
    if (word.find('=') != std::string::npos && word.find(' ') == std::string::npos)
      out.push_back(word);
  }
  return out;
}

// Commented example plugin lines: "#     required <path> key=value ...".
std::vector<std::vector<std::string>> example_settings() {
  std::vector<std::vector<std::string>> out;
  for (const auto& line : snippet_lines()) {
    if (line.empty() || line[0] != '#') continue;
    auto words = words_of(line.substr(1));
    if (words.size() < 2 || (words[0] != "required" && words[0] != "optional")) continue;
    out.emplace_back(words.begin() + 2, words.end());
  }
  return out;
}

// The settings whose defaults the snippet documents, as one comparable value
// (gtest prints every field of a mismatch).
auto documented_settings(const dp::SiteConfig& c) {
  return std::tie(c.kind, c.devices_per_node, c.tiles_per_device, c.port_min, c.port_max,
                  c.default_on, c.lease_dir, c.idle_timeout_s, c.port_wait_s, c.heartbeat_timeout_s,
                  c.report, c.use_resv_ports);
}

TEST(PlugstackSnippet, DocumentedDefaultsAreTheParsersDefaults) {
  const auto documented = documented_defaults();
  ASSERT_GE(documented.size(), 5u) << "no '#   key=default' lines found in " << DP_SNIPPET_PATH;
  // "key=" documents a key with no default (unset); the parser rightly
  // refuses an empty value, so only keys with a value are parsed here.
  std::vector<std::string> defaults;
  for (const auto& word : documented)
    if (word.back() != '=') defaults.push_back(word);
  auto parsed = dp::parse_site_config(defaults);
  ASSERT_TRUE(parsed) << parsed.error().message;
  const dp::SiteConfig want;
  EXPECT_EQ(documented_settings(*parsed), documented_settings(want));
  // An empty daemon path means the installed daemon, which the snippet names.
  EXPECT_TRUE(want.daemon_path.empty());
  EXPECT_EQ(parsed->daemon_path, DP_DAEMON_PATH);
}

TEST(PlugstackSnippet, DocumentsExactlyTheSettingsTheParserAccepts) {
  std::vector<std::string> documented;
  for (const auto& word : documented_defaults())
    documented.push_back(word.substr(0, word.find('=')));
  std::vector<std::string> accepted = dp::site_config_keys();
  std::sort(documented.begin(), documented.end());
  std::sort(accepted.begin(), accepted.end());
  EXPECT_EQ(documented, accepted)
      << "every key the plugin accepts needs one '#   key=default' line in " << DP_SNIPPET_PATH
      << ", and no other key may have one";
}

TEST(PlugstackSnippet, EveryExampleLineIsAccepted) {
  const auto examples = example_settings();
  ASSERT_GE(examples.size(), 4u) << "expected NVIDIA, Intel GPU, SambaNova and CPU examples";
  for (const auto& words : examples) {
    auto parsed = dp::parse_site_config(words);
    std::string shown;
    for (const auto& w : words) shown += w + " ";
    EXPECT_TRUE(parsed) << shown << ": " << (parsed ? "" : parsed.error().message);
  }
}

TEST(PlugstackSnippet, ExamplesCoverEveryAcceleratorKind) {
  std::vector<dp::AcceleratorKind> seen;
  for (const auto& words : example_settings()) {
    auto parsed = dp::parse_site_config(words);
    if (parsed) seen.push_back(parsed->kind);
  }
  for (auto kind : {dp::AcceleratorKind::cuda, dp::AcceleratorKind::ze, dp::AcceleratorKind::rdu,
                    dp::AcceleratorKind::none}) {
    EXPECT_NE(std::find(seen.begin(), seen.end(), kind), seen.end())
        << "no example line for kind=" << dp::accelerator_kind_name(kind);
  }
}

}  // namespace
