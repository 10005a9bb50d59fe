#!/usr/bin/python3
"""A Hugging Face transformers Trainer as its docs write one: a tiny GPT-2 made
from a config (no download), a synthetic token dataset, TrainingArguments on
the CPU over gloo; nothing of slurm-dp or of the launch form in it. Each
process prints one line at the end:

  trainer rank=R world=W host=H loss=<the run's training loss, all ranks' mean>
"""
import os
import socket
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self):
        self.x = torch.randint(0, 64, (128, 16), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2))
    args = TrainingArguments(
        output_dir=sys.argv[1], per_device_train_batch_size=4, max_steps=8, learning_rate=1e-3,
        seed=0, use_cpu=True, ddp_backend="gloo", report_to="none", save_strategy="no",
        logging_steps=1, disable_tqdm=True, dataloader_num_workers=0)
    out = Trainer(model=model, args=args, train_dataset=Tokens()).train()
    line = (f"trainer rank={args.process_index} world={args.world_size} "
            f"host={socket.gethostname()} loss={out.training_loss:.9f}\n")
    os.write(1, line.encode())  # one write: a launcher's workers share a pipe
    os._exit(0)  # gloo can deadlock at interpreter exit


if __name__ == "__main__":
    main()
