// Names of the environment variables the SPANK plugin sets for every task and
// the runtime reads. One place, so both sides always agree.
#pragma once

namespace dp::env {

// torchrun's names: PyTorch, Accelerate, Lightning, Megatron read these.
inline constexpr const char* kRank = "RANK";
inline constexpr const char* kLocalRank = "LOCAL_RANK";
inline constexpr const char* kWorldSize = "WORLD_SIZE";
inline constexpr const char* kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kNodeRank = "NODE_RANK";
inline constexpr const char* kGroupRank = "GROUP_RANK";
inline constexpr const char* kMasterAddr = "MASTER_ADDR";
inline constexpr const char* kMasterPort = "MASTER_PORT";
// --dp-master-socket=pass, rank 0 only: MASTER_PORT's listening socket.
inline constexpr const char* kMasterListenFd = "DP_MASTER_LISTEN_FD";
// --dp-ports=N: the step's N more ports on rank 0's node, comma-separated;
// with --dp-master-socket=pass, rank 0's listening sockets for them, in order.
inline constexpr const char* kPorts = "DP_PORTS";
inline constexpr const char* kPortsListenFds = "DP_PORTS_LISTEN_FDS";
// JAX's coordinator (jax.distributed.initialize reads it before its own
// Slurm guess of 61440 + job id mod 4096): rank 0's node and the step's port.
inline constexpr const char* kJaxCoordinatorAddress = "JAX_COORDINATOR_ADDRESS";

// torchrun's own settings (a flag of the launcher wins over its variable): a
// step with one task per node gets them, so a per-node launcher needs no flags.
// --dp-store=step: every rank a client of its node's agent store (PyTorch's names).
inline constexpr const char* kTorchelasticUseAgentStore = "TORCHELASTIC_USE_AGENT_STORE";
inline constexpr const char* kTorchelasticRestartCount = "TORCHELASTIC_RESTART_COUNT";
inline constexpr const char* kStore = "DP_STORE";  // step: MASTER_* name the node's agent store
// --dp-spares, --dp-max-restarts: how many restarts in place came before this
// start of the program (as TORCHELASTIC_RESTART_COUNT): 0 at the step's start.
inline constexpr const char* kRestartCount = "DP_RESTART_COUNT";
inline constexpr const char* kPetNnodes = "PET_NNODES";
inline constexpr const char* kPetNodeRank = "PET_NODE_RANK";
inline constexpr const char* kPetNprocPerNode = "PET_NPROC_PER_NODE";
inline constexpr const char* kPetMasterAddr = "PET_MASTER_ADDR";
inline constexpr const char* kPetMasterPort = "PET_MASTER_PORT";
inline constexpr const char* kPetRdzvBackend = "PET_RDZV_BACKEND";
// --dp-spares in a launcher's step: torchrun's c10d rendezvous in the step's store.
inline constexpr const char* kPetRdzvEndpoint = "PET_RDZV_ENDPOINT";
inline constexpr const char* kPetRdzvId = "PET_RDZV_ID";
inline constexpr const char* kPetRdzvConf = "PET_RDZV_CONF";
// How often torchrun looks at its workers: PyTorch 2.x's own 0.1 s, which
// 1.13 (5 s) would otherwise make a lost node's survivors wait on.
inline constexpr const char* kPetMonitorInterval = "PET_MONITOR_INTERVAL";
// PyTorch 2.6+ shares one worker store per rendezvous and keeps its address
// on a launcher that is not node rank 0 again: after a lost node it names the
// lost node. "1": every round publishes its own (older PyTorch ignores it).
inline constexpr const char* kTorchDisableShareRdzvStore = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE";

// The accelerator mask, one of them by the site's kind.
inline constexpr const char* kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";
inline constexpr const char* kZeAffinityMask = "ZE_AFFINITY_MASK";       // "device.stack" entries
inline constexpr const char* kRduTileAffinity = "SF_RNT_TILE_AFFINITY";  // "0x" bit mask

// slurm-dp's own.
inline constexpr const char* kRdvAddr = "DP_RDV_ADDR";      // host:port of dp-rendezvousd
inline constexpr const char* kRdvSecret = "DP_RDV_SECRET";  // per-step secret, hex; never logged
// "@name": the node agent's abstract socket; the ranks talk to it instead of DP_RDV_ADDR.
inline constexpr const char* kAgentSocket = "DP_AGENT_SOCKET";
// The node's network namespace ("net:[4026531840]"), where that socket lives.
inline constexpr const char* kAgentNetns = "DP_AGENT_NETNS";
inline constexpr const char* kJobId = "DP_JOB_ID";
inline constexpr const char* kStepId = "DP_STEP_ID";
inline constexpr const char* kTiles = "DP_TILES";  // this task's tiles, "0,1,2,3"
// srun's resolved --dp-* options, the one value the nodes and the runtime read
// (dp::parse_node_options): "--dp-world=auto --dp-tiles=2".
inline constexpr const char* kOptions = "DP_OPTIONS";
// "<job>.<step>": srun only explained or refused this step; its nodes end every
// task before the program (a launched step ends as Slurm's own steps do).
inline constexpr const char* kSkipStep = "DP_SKIP_STEP";
inline constexpr const char* kBackend = "DP_BACKEND";       // user override: gloo|nccl
inline constexpr const char* kTimeoutMs = "DP_TIMEOUT_MS";  // user override
inline constexpr const char* kDebug = "DP_DEBUG";           // 1: per-phase start-up timings
inline constexpr const char* kStoreDir = "DP_STORE_DIR";    // no daemon: shared dir as Gloo store
inline constexpr const char* kShm = "DP_SHM";               // auto|off: all_reduce in shared memory
inline constexpr const char* kProgress =
    "DP_PROGRESS";  // on|off: collective counters on heartbeats

}  // namespace dp::env
