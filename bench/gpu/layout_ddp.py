"""gpu-check's per-task layout case: 2 tasks on one node with --dp-tiles=1
(and the same step with --gpus-per-task=1 alone) through the layout core
(dp_layout_explain: the variables srun and slurmstepd compute for each
task), then ddp_local_rank.py, unmodified, started once per task with
exactly those variables. Checks that entry LOCAL_RANK of each task's
CUDA_VISIBLE_DEVICES is its own tile, and, on CUDA, that each rank drove
the GPU of its own tile and that DDP kept the ranks' parameters equal.

  layout_ddp.py EXPLAIN DDP_SCRIPT [--cpu]

One GPU stands for both tiles where CUDA lists it twice (its index, then
its UUID); each rank then gets its own NCCL_HOSTID (NCCL refuses two ranks
on one device otherwise). Prints one line: PASS, SKIP or FAIL, and why."""
import json
import os
import socket
import subprocess
import sys
import tempfile


def gpus():
    """The machine's GPU UUIDs in nvidia-smi's (PCI bus) order."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [u.strip() for u in out.splitlines() if u.strip()]


def cuda_count(visible):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=visible, CUDA_DEVICE_ORDER="PCI_BUS_ID")
    r = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                       capture_output=True, text=True, env=env, timeout=120)
    return int(r.stdout.strip() or 0)


def explain(binary, facts, work, name):
    path = os.path.join(work, name + ".txt")
    with open(path, "w") as f:
        f.write(facts)
    r = subprocess.run([binary, path], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise SystemExit(f"FAIL per-task layout: dp_layout_explain refused {name}: {r.stdout}{r.stderr}")
    tasks = []
    for line in r.stdout.splitlines():
        if line.startswith("task "):
            head, _, rest = line.partition(": ")
            tasks.append(dict(w.split("=", 1) for w in rest.split()))
    return tasks


def main():
    binary, script = sys.argv[1], sys.argv[2]
    cpu = "--cpu" in sys.argv[3:]
    work = tempfile.mkdtemp(prefix="layout-ddp.")
    uuids = [] if cpu else gpus()
    if cpu or len(uuids) >= 2:
        tiles, one_gpu = ["0", "1"], False
    elif len(uuids) == 1:
        tiles, one_gpu = ["0", uuids[0]], True
    else:
        return print("SKIP per-task layout: no GPU found by nvidia-smi")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    common = (f"site kind=cuda\nhosts gpu1\ntasks_per_node 2\nvisible CUDA_VISIBLE_DEVICES={','.join(tiles)}\n"
              f"master_addr 127.0.0.1\nmaster_port {port}\n")
    tasks = explain(binary, common + "options --dp-world=auto --dp-tiles=1\n", work, "tiles")
    bound = explain(binary, common + "options --dp-world=auto\n"
                    "request TresPerTask=gres:gpu:1 TresBind=gpu:per_task:1\n", work, "gpus_per_task")
    if len(tasks) != 2 or [t["CUDA_VISIBLE_DEVICES"] for t in bound] != [t["CUDA_VISIBLE_DEVICES"] for t in tasks]:
        return print(f"FAIL per-task layout: --dp-tiles=1 and --gpus-per-task=1 masks differ: {tasks} {bound}")
    for t in tasks:  # entry LOCAL_RANK is the task's own tile (its share: tile LOCAL_RANK)
        mask, lr = t["CUDA_VISIBLE_DEVICES"].split(","), int(t["LOCAL_RANK"])
        if lr >= len(mask) or mask[lr] != tiles[lr]:
            return print(f"FAIL per-task layout: task {t['RANK']}: cuda:{lr} of {mask} is not its tile {tiles[lr]}")
    if one_gpu and not cpu and cuda_count(tasks[0]["CUDA_VISIBLE_DEVICES"]) != 2:
        return print("SKIP per-task layout run: one GPU, and CUDA does not list it twice as "
                     f"CUDA_VISIBLE_DEVICES={tasks[0]['CUDA_VISIBLE_DEVICES']}; the masks are right "
                     f"({[t['CUDA_VISIBLE_DEVICES'] for t in tasks]}); a 2-GPU machine runs the DDP script")
    procs = []
    for t in tasks:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DP_", "SLURM_"))}
        env.update(t, CUDA_DEVICE_ORDER="PCI_BUS_ID", OMP_NUM_THREADS="1")
        if one_gpu:
            env.update(NCCL_HOSTID=f"layout-ddp-{t['RANK']}", NCCL_SOCKET_IFNAME="lo")
        procs.append(subprocess.Popen([sys.executable, script], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        outs.append((p.returncode, out))
    if any(rc != 0 for rc, _ in outs):
        return print("FAIL per-task layout run: " + " | ".join(f"exit {rc}: {o.strip()[-400:]}" for rc, o in outs))
    infos = [json.loads(o.strip().splitlines()[-1]) for _, o in outs]
    if not all(i["same_params"] for i in infos):
        return print(f"FAIL per-task layout run: ranks' parameters differ after DDP: {infos}")
    if not cpu:
        for i, t in zip(infos, tasks):  # the GPU of the task's own tile
            own = uuids[int(tiles[int(t["LOCAL_RANK"])])] if not one_gpu else uuids[0]
            if own.removeprefix("GPU-") not in i.get("uuid", ""):
                return print(f"FAIL per-task layout run: rank {i['rank']} drove {i.get('uuid')}, not its tile's {own}")
    masks = ", ".join(f"rank {t['RANK']} LOCAL_RANK={t['LOCAL_RANK']} CUDA_VISIBLE_DEVICES={t['CUDA_VISIBLE_DEVICES']}"
                      for t in tasks)
    how = "on Gloo (CPU dry run: no set_device)" if cpu else ("one GPU standing for both tiles" if one_gpu else "2 GPUs")
    print(f"PASS per-task layout: {masks} from the layout core; unmodified DDP with set_device(LOCAL_RANK) "
          f"ran 2 ranks, {how}, each on its own tile, parameters equal")


if __name__ == "__main__":
    main()
