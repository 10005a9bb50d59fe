# An MPI program (mpi4py, Open MPI from the archive), unmodified: one
# allreduce, and its place in the world beside the one slurm-dp gave its task.
import os
import socket

from mpi4py import MPI

world = MPI.COMM_WORLD
total = world.allreduce(world.Get_rank() + 1)
print(f"mpi rank={world.Get_rank()} world={world.Get_size()} slurm_dp_rank={os.environ.get('RANK')} "
      f"host={socket.gethostname()} params={total:016x}", flush=True)
