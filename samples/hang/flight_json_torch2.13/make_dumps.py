"""Real Flight Recorder JSON dumps (torch CPU build, gloo) for two hang shapes; see samples/hang/README.md.

Each rank writes `_dump_fr_trace_json(True, False)` (PyTorch's own JSON writer) and, for the comparison
test, `_dump_fr_trace(True, False, False)` (the pickle) of the same moment.
"""
import datetime, os, sys, time
import torch, torch.distributed as dist, torch.multiprocessing as mp

def run(rank, world, scenario, out, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    t = torch.ones(1024)
    for _ in range(4):
        dist.all_reduce(t)
    if scenario == "a_rank_skips" and rank == 2:
        pass  # rank 2 never issues collective 5
    elif scenario == "c_mismatch" and rank == 1:
        dist.broadcast(torch.ones(256), src=0, async_op=True)
    else:
        dist.all_reduce(t, async_op=True)
    time.sleep(2)
    os.makedirs(os.path.join(out, "json"), exist_ok=True)
    open(os.path.join(out, "json", f"nccl_trace_rank_{rank}.json"), "wb").write(torch._C._distributed_c10d._dump_fr_trace_json(True, False))
    os.makedirs(os.path.join(out, "pickle"), exist_ok=True)
    open(os.path.join(out, "pickle", f"nccl_trace_rank_{rank}"), "wb").write(torch._C._distributed_c10d._dump_fr_trace(True, False, False))
    sys.stdout.flush()
    os._exit(0)

if __name__ == "__main__":
    os.environ["TORCH_FR_BUFFER_SIZE"] = "64"
    base = sys.argv[1] if len(sys.argv) > 1 else "/tmp/frjson"
    for i, sc in enumerate(["a_rank_skips", "c_mismatch"]):
        mp.spawn(run, args=(4, sc, f"{base}/{sc}", 29700 + i), nprocs=4, join=True)
