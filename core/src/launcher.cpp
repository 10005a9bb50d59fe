#include "dp/launcher.hpp"

#include <cctype>
#include <string>

#include "dp/env_names.hpp"

namespace dp {

namespace {

std::string base_name(const std::string& word) {
  const auto slash = word.rfind('/');
  return slash == std::string::npos ? word : word.substr(slash + 1);
}

// python, python3, python3.11
bool is_python(const std::string& name) {
  if (name.rfind("python", 0) != 0) return false;
  for (size_t i = 6; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i])) && name[i] != '.') return false;
  return true;
}

bool is_shell(const std::string& name) {
  return name == "sh" || name == "bash" || name == "dash" || name == "zsh" || name == "ksh";
}

std::string launcher_module(const std::string& module) {
  return module == "torch.distributed.run" || module == "torch.distributed.launch" ? module : "";
}

// `python [flags] -m MODULE ...`: the module, when it is a launcher.
std::string python_launcher(const std::vector<std::string>& words, size_t first) {
  for (size_t j = first; j < words.size(); ++j) {
    const std::string& w = words[j];
    if (w == "-m") return j + 1 < words.size() ? launcher_module(words[j + 1]) : "";
    if (w.rfind("-m", 0) == 0) return launcher_module(w.substr(2));
    if (w.empty() || w[0] != '-' || w == "-c" || w == "-") return "";  // a script or code
  }
  return "";
}

// The script of `sh -c SCRIPT` as words, split at blanks and shell operators.
std::vector<std::string> script_words(const std::string& script) {
  std::vector<std::string> out(1);
  for (char c : script) {
    const bool blank = std::isspace(static_cast<unsigned char>(c)) != 0;
    const bool op = c == ';' || c == '&' || c == '|' || c == '(' || c == ')';
    if (!blank && !op) {
      out.back() += c;
      continue;
    }
    if (!out.back().empty()) out.emplace_back();
    if (op) out.back() = ";", out.emplace_back();
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

std::string launcher_at(const std::vector<std::string>& words, size_t i, bool in_shell);

// Every command of a shell script, each after a separator.
std::string shell_launcher(const std::vector<std::string>& words, size_t first) {
  for (size_t j = first; j + 1 < words.size(); ++j) {
    if (words[j] != "-c") continue;
    const auto script = script_words(words[j + 1]);
    for (size_t k = 0; k < script.size(); ++k) {
      if (k > 0 && script[k - 1] != ";") continue;
      auto found = launcher_at(script, k, true);
      if (!found.empty()) return found;
    }
    return "";
  }
  return "";
}

// The command that starts at words[i], after `env` and VAR=value words.
std::string launcher_at(const std::vector<std::string>& words, size_t i, bool in_shell) {
  while (i < words.size() && (words[i] == "env" || words[i] == "exec" ||
                              (words[i].find('=') != std::string::npos && words[i][0] != '-')))
    ++i;
  if (i >= words.size()) return "";
  const std::string name = base_name(words[i]);
  if (name == "torchrun" || name == "ft_launcher") return name;
  if (is_python(name)) return python_launcher(words, i + 1);
  if (is_shell(name) && !in_shell) return shell_launcher(words, i + 1);
  return "";
}

// True when a launcher flag `flag` comes before the script (a word ending
// in .py), also in the script of `sh -c`.
bool has_launcher_flag(const std::vector<std::string>& words, const std::string& flag) {
  for (size_t j = 0; j < words.size(); ++j) {
    const std::string& w = words[j];
    if (w == flag || w.rfind(flag + "=", 0) == 0) return true;
    if (w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0) return false;
    if (w == "-c" && j + 1 < words.size() && has_launcher_flag(script_words(words[j + 1]), flag))
      return true;
  }
  return false;
}

}  // namespace

std::string launcher_in_command(const std::vector<std::string>& argv) {
  return launcher_at(argv, 0, false);
}

Result<LaunchShape> launch_shape(const Options& opts, const std::vector<std::string>& command,
                                 int nodes, int tasks) {
  LaunchShape s;
  s.nodes = nodes;
  const Launcher mode = opts.launcher.value_or(Launcher::auto_detect);
  if (mode == Launcher::none) return s;
  s.launcher = mode == Launcher::torchrun ? "torchrun" : launcher_in_command(command);
  s.per_node = nodes > 0 && tasks == nodes;
  if (!s.launcher.empty() && !s.per_node)
    return make_error(Errc::invalid_argument,
                      s.launcher + " is a per-node launcher (it starts the workers itself), but " +
                          "this step runs " + std::to_string(tasks) + " tasks on " +
                          std::to_string(nodes) + " node(s); use --ntasks-per-node=1 (slurm-dp " +
                          "then gives each launcher its node rank, the master and the workers " +
                          "per node)");
  if (!s.launcher.empty() && nodes > 1 && has_launcher_flag(command, "--standalone"))
    return make_error(Errc::invalid_argument,
                      s.launcher + " --standalone: each of the " + std::to_string(nodes) +
                          " nodes would train alone as a world of its own; drop --standalone "
                          "(slurm-dp gives the launcher its nodes, node rank and master)");
  if (!s.launcher.empty() && opts.passes_master_socket())
    return make_error(Errc::invalid_argument,
                      "--dp-master-socket=pass: " + s.launcher +
                          " binds MASTER_PORT itself and cannot take a socket; leave the option "
                          "out for a launcher (it is for a program that builds its own TCPStore)");
  if (!s.launcher.empty() && opts.master_socket == MasterSocket::share)
    return make_error(Errc::invalid_argument,
                      "--dp-master-socket=share: " + s.launcher +
                          " binds MASTER_PORT with PyTorch's TCPStore, which does not set "
                          "SO_REUSEPORT, so the shared hold would keep it out; leave the option "
                          "out for a launcher (it is for servers that set SO_REUSEPORT, such as "
                          "JAX's)");
  return s;
}

Result<Workers> plan_workers(const std::vector<std::string>& tiles, int tiles_per_worker) {
  Workers w;
  const int have = static_cast<int>(tiles.size());
  const int k = tiles_per_worker;
  if (k <= 0) {
    w.count = have;
    for (const auto& t : tiles) w.devices.push_back({t});
    return w;
  }
  if (have < k)
    return make_error(
        Errc::invalid_argument,
        "--dp-tiles=" + std::to_string(k) + ": a launcher's worker needs " + std::to_string(k) +
            " tiles but the node gives the step " + std::to_string(have) +
            "; use --dp-tiles=" + std::to_string(have > 0 ? have : 1) + " or request more devices");
  w.count = have / k;
  w.devices.resize(static_cast<size_t>(w.count));
  for (int j = 0; j < k; ++j)
    for (int worker = 0; worker < w.count; ++worker) {
      const int index = worker * k + j;
      w.mask.push_back(tiles[static_cast<size_t>(index)]);
      w.indices.push_back(index);
      w.devices[static_cast<size_t>(worker)].push_back(tiles[static_cast<size_t>(index)]);
    }
  return w;
}

std::vector<std::pair<std::string, std::string>> launcher_environment(const LaunchShape& shape,
                                                                      int rank,
                                                                      const Workers& workers) {
  if (!shape.per_node) return {};
  if (shape.elastic()) {
    const std::string n = std::to_string(shape.nodes - shape.spares);
    std::vector<std::pair<std::string, std::string>> env = {{env::kPetNnodes, n + ":" + n}};
    if (workers.count > 0) env.emplace_back(env::kPetNprocPerNode, std::to_string(workers.count));
    env.emplace_back(env::kPetRdzvBackend, "c10d");
    return env;
  }
  std::vector<std::pair<std::string, std::string>> env = {
      {env::kPetNnodes, std::to_string(shape.nodes)},
      {env::kPetNodeRank, std::to_string(rank)},
  };
  if (workers.count > 0) env.emplace_back(env::kPetNprocPerNode, std::to_string(workers.count));
  env.emplace_back(env::kPetRdzvBackend, "static");
  return env;
}

std::vector<std::pair<std::string, std::string>> launcher_master_environment(
    const LaunchShape& shape, const std::string& addr, const std::string& port) {
  if (!shape.per_node) return {};
  if (shape.elastic())
    return {{env::kPetRdzvEndpoint, "127.0.0.1:" + port},
            {env::kPetRdzvId, "slurm-dp"},
            {env::kPetRdzvConf, "is_host=false,join_timeout=86400"},
            {env::kPetMonitorInterval, "0.1"},
            {env::kTorchDisableShareRdzvStore, "1"}};
  return {{env::kPetMasterAddr, addr}, {env::kPetMasterPort, port}};
}

}  // namespace dp
