"""Test-only workaround for Debian 13's python3-torch 2.6, which is built
without the libuv TCPStore that torch 2.6 asks for by default: torchrun's
static rendezvous creates its store without reading USE_LIBUV, so it cannot
start. On PYTHONPATH, this makes every TCPStore default to use_libuv=False.
Debian's build, not slurm-dp's; the user docs say so."""
import sys

import torch.distributed as _dist

_Real = _dist.TCPStore


class _TCPStoreWithoutLibuv(_Real):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("use_libuv", False)
        super().__init__(*args, **kwargs)


# Modules torch.distributed already imported hold their own name for it.
for _name, _module in list(sys.modules.items()):
    if _name.startswith("torch.distributed") and getattr(_module, "TCPStore", None) is _Real:
        _module.TCPStore = _TCPStoreWithoutLibuv
