// The documents of the site keys tell the truth: the shipped plugstack.conf.d
// snippet, the man page slurm-dp(8) and ADMIN.md each list exactly the keys of
// the table (dp::site_keys()) with its defaults, and every example plugin
// line of the snippet is accepted by the parser. Reads the configured snippet
// and man page and the source ADMIN.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dp/options.hpp"
#include "dp/site_config.hpp"

namespace {

std::vector<std::string> lines_of(const char* path) {
  std::ifstream in(path);
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

// key -> default as the table has it ("" : unset).
std::map<std::string, std::string> table_defaults() {
  std::map<std::string, std::string> out;
  for (const auto& k : dp::site_keys()) out[k.key] = k.def;
  return out;
}

template <class Map>
std::vector<std::string> keys_of(const Map& m) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : m) keys.push_back(k);
  return keys;
}

// ---- the snippet

// "#   key=value" lines: one documented default each ("key=": unset).
std::map<std::string, std::string> snippet_defaults() {
  std::map<std::string, std::string> out;
  const std::string mark = "#   ";
  for (const auto& line : lines_of(DP_SNIPPET_PATH)) {
    if (line.rfind(mark, 0) != 0 || line.size() <= mark.size() || line[mark.size()] == ' ')
      continue;
    const std::string word = line.substr(mark.size());
    const auto eq = word.find('=');
    if (eq != std::string::npos && word.find(' ') == std::string::npos)
      out[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return out;
}

// Commented example plugin lines: "#     required <path> key=value ...".
std::vector<std::vector<std::string>> example_settings() {
  std::vector<std::vector<std::string>> out;
  for (const auto& line : lines_of(DP_SNIPPET_PATH)) {
    if (line.empty() || line[0] != '#') continue;
    auto words = words_of(line.substr(1));
    if (words.size() < 2 || (words[0] != "required" && words[0] != "optional")) continue;
    out.emplace_back(words.begin() + 2, words.end());
  }
  return out;
}

TEST(PlugstackSnippet, DocumentsEveryKeyWithTheTablesDefault) {
  const auto documented = snippet_defaults();
  ASSERT_GE(documented.size(), 5u) << "no '#   key=default' lines found in " << DP_SNIPPET_PATH;
  EXPECT_EQ(documented, table_defaults())
      << "every key needs one '#   key=default' line in " << DP_SNIPPET_PATH
      << " with the default of the table in core/src/site_config.cpp ('key=' when unset), and "
         "no other key may have one";
}

TEST(PlugstackSnippet, EveryExampleLineIsAccepted) {
  const auto examples = example_settings();
  ASSERT_GE(examples.size(), 4u) << "expected NVIDIA, Intel GPU, SambaNova and CPU examples";
  for (const auto& words : examples) {
    auto parsed = dp::parse_site_config(words);
    std::string shown;
    for (const auto& w : words) shown += w + " ";
    EXPECT_TRUE(parsed) << shown << ": " << (parsed ? "" : parsed.error().message);
    if (parsed) {
      EXPECT_TRUE(parsed->warnings.empty()) << shown << ": " << parsed->warnings[0];
    }
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

// ---- the man page

// A man-page line as text: font macros and escapes removed. `.BR a b` sets
// its arguments together, `.B a b` with spaces.
std::string roff_text(const std::string& line) {
  std::string text = line;
  if (!text.empty() && text[0] == '.') {
    const auto space = text.find(' ');
    const std::string macro = text.substr(1, space == std::string::npos ? 0 : space - 1);
    text = space == std::string::npos ? "" : text.substr(space + 1);
    std::vector<std::string> args;
    std::string arg;
    bool quoted = false;
    for (char c : text + " ") {
      if (c == '"') quoted = !quoted;
      else if (c == ' ' && !quoted) {
        if (!arg.empty()) args.push_back(arg);
        arg.clear();
      } else arg += c;
    }
    text.clear();
    for (const auto& a : args) text += (macro.size() == 1 && !text.empty() ? " " : "") + a;
  }
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"\\-", "-"},
                                 {"\\e", "\\"},
                                 {"\\fB", ""},
                                 {"\\fI", ""},
                                 {"\\fR", ""},
                                 {"\\fP", ""}}) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  }
  return text;
}

struct ManEntry {
  std::string tag, body;
};

// The .TP entries of one section of the page, by what their tag names
// before '=' (a site key, an option).
std::map<std::string, ManEntry> man_entries(const std::string& section) {
  std::map<std::string, ManEntry> out;
  bool in_section = false, want_tag = false;
  ManEntry* current = nullptr;
  for (const auto& line : lines_of(DP_MAN_PAGE)) {
    if (line.rfind(".SH", 0) == 0) {
      in_section = line == ".SH " + section;
      current = nullptr;
      continue;
    }
    if (!in_section) continue;
    if (line == ".TP") {
      want_tag = true;
      continue;
    }
    const std::string text = roff_text(line);
    if (want_tag) {
      want_tag = false;
      current = &out[text.substr(0, text.find('='))];
      current->tag = text;
    } else if (current && !text.empty()) {
      current->body += (current->body.empty() ? "" : " ") + text;
    }
  }
  return out;
}

TEST(ManPage, DocumentsExactlyTheTablesKeysWithTheirDefaultsAndChoices) {
  const auto entries = man_entries("SITE SETTINGS");
  EXPECT_EQ(keys_of(entries), keys_of(table_defaults()))
      << DP_MAN_PAGE << ": its SITE SETTINGS entries (.TP, then key=...) and the table differ";
  for (const auto& k : dp::site_keys()) {
    auto it = entries.find(k.key);
    if (it == entries.end()) continue;
    const ManEntry& e = it->second;
    if (!k.def.empty()) {
      const std::string want = "Default: " + k.def;
      const auto at = e.body.find(want);
      const bool found = at != std::string::npos &&
                         (at + want.size() == e.body.size() ||
                          std::string(" .,;").find(e.body[at + want.size()]) != std::string::npos);
      EXPECT_TRUE(found) << k.key << ": the page's entry should say '" << want
                         << "'; it says: " << e.body;
    }
    if (k.values.find('|') != std::string::npos) {
      EXPECT_EQ(e.tag, k.key + "=" + k.values) << "the choices of " << k.key;
    }
  }
}

// ---- ADMIN.md

// The rows of a Markdown table of `path` whose header starts with `header`:
// each row's cells, backquotes dropped, "\|" read as '|', trimmed.
std::vector<std::vector<std::string>> markdown_rows(const char* path, const std::string& header) {
  std::vector<std::vector<std::string>> out;
  bool in_table = false;
  for (const auto& line : lines_of(path)) {
    if (line.rfind(header, 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.empty() || line[0] != '|') break;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
        cell += '|';
        ++i;
      } else if (line[i] == '|') {
        cells.push_back(cell);
        cell.clear();
      } else if (line[i] != '`') {
        cell += line[i];
      }
    }
    for (auto& c : cells) {
      const auto first = c.find_first_not_of(' ');
      c = first == std::string::npos ? "" : c.substr(first, c.find_last_not_of(' ') + 1 - first);
    }
    if (cells.empty() || cells[0].rfind("---", 0) == 0) continue;
    out.push_back(cells);
  }
  return out;
}

// The rows of the site settings table: key -> {values, default}.
std::map<std::string, std::vector<std::string>> admin_rows() {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& cells : markdown_rows(DP_ADMIN_GUIDE, "| key | values | default |")) {
    if (cells.size() >= 3) out[cells[0]] = {cells[1], cells[2] == "unset" ? "" : cells[2]};
  }
  return out;
}

TEST(AdminGuide, ItsTableIsTheTablesKeysValuesAndDefaults) {
  const auto rows = admin_rows();
  ASSERT_FALSE(rows.empty()) << DP_ADMIN_GUIDE << ": no '| key | values | default |' table";
  EXPECT_EQ(keys_of(rows), keys_of(table_defaults())) << DP_ADMIN_GUIDE;
  for (const auto& k : dp::site_keys()) {
    auto it = rows.find(k.key);
    if (it == rows.end()) continue;
    EXPECT_EQ(it->second[0], k.values) << "values of " << k.key << " in " << DP_ADMIN_GUIDE;
    EXPECT_EQ(it->second[1], k.def)
        << "default of " << k.key << " in " << DP_ADMIN_GUIDE << " ('unset' when none)";
  }
}

// ---- the --dp-* options (dp::option_specs, core/src/options.cpp)

// "--dp-NAME=ARGINFO", or "--dp-NAME" for a flag: as the documents write them.
std::map<std::string, std::string> table_options() {
  std::map<std::string, std::string> out;
  for (const auto& o : dp::option_specs()) {
    const std::string name = std::string("--") + o.name;
    out[name] = o.arginfo ? name + "=" + o.arginfo : name;
  }
  return out;
}

TEST(Readme, ItsOptionsTableIsTheTablesOptions) {
  std::map<std::string, std::string> rows;
  for (const auto& cells : markdown_rows(DP_README, "| option | meaning |"))
    rows[cells[0].substr(0, cells[0].find('='))] = cells[0];
  EXPECT_EQ(rows, table_options()) << DP_README << ": its '| option | meaning |' table lists each "
                                   << "option of core/src/options.cpp once, as `--dp-NAME=VALUES`";
}

TEST(ManPage, DocumentsExactlyTheTablesOptions) {
  std::vector<std::string> documented;
  for (const auto& [name, e] : man_entries("OPTIONS"))
    if (name.rfind("--dp-", 0) == 0) documented.push_back(name);
  EXPECT_EQ(documented, keys_of(table_options()))
      << DP_MAN_PAGE << ": its OPTIONS entries (.TP, then --dp-NAME...) and the table differ";
}

}  // namespace
