"""Real gloo Flight Recorder dumps (torch CPU build) for three hang shapes; see samples/hang/README.md."""
import os, sys, time, datetime, torch, torch.distributed as dist, torch.multiprocessing as mp

def run(rank, world, scenario, out, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    t = torch.ones(1024)
    for _ in range(4):
        dist.all_reduce(t)
    pending = None
    if scenario == "a_rank_skips" and rank == 2:
        pass  # rank 2 never issues collective 5
    elif scenario == "c_mismatch" and rank == 1:
        pending = dist.broadcast(torch.ones(256), src=0, async_op=True)
    elif scenario == "e_all_done":
        dist.all_reduce(t)
    else:
        pending = dist.all_reduce(t, async_op=True)
    time.sleep(2)
    d = torch._C._distributed_c10d._dump_fr_trace(True, False, False)
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, f"nccl_trace_rank_{rank}"), "wb").write(d)
    sys.stdout.flush()
    os._exit(0)

if __name__ == "__main__":
    os.environ["TORCH_FR_BUFFER_SIZE"] = "64"
    for i, sc in enumerate(["a_rank_skips", "c_mismatch", "e_all_done"]):
        ctx = mp.spawn(run, args=(4, sc, f"/tmp/frgen2/{sc}", 29600 + i), nprocs=4, join=True)
