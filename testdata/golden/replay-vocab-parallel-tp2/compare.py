# Replays the 2-rank vocab-parallel step (legacy and PIR spelling) and the same model on one rank,
# and says whether the sharded job computes what the serial one does: the loss on every rank, and
# each updated parameter and Adam moment, its shards put back together (rows of the embedding,
# columns of the head), within float32 rounding.
import ast, struct, subprocess, sys

sp_opt, testdata, tmp = sys.argv[1:4]

def replay(job, dump):
    subprocess.run([sp_opt, "replay", f"{testdata}/jobs/{job}", "--dump", f"{tmp}/{dump}"], check=True, stdout=subprocess.DEVNULL)

def load(dump, rank, var):
    b = open(f"{tmp}/{dump}/rank{rank}/{var}.npy", "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    head = ast.literal_eval(b[10:10 + n].decode())
    assert head["descr"] == "<f4" and not head["fortran_order"], head
    data = b[10 + n:]
    return list(head["shape"]), list(struct.unpack(f"<{len(data) // 4}f", data))

def rows(parts):  # shards of dim 0
    return [x for _, p in parts for x in p]

def cols(parts):  # shards of dim 1 of a 2-D tensor
    r = parts[0][0][0]
    return [x for i in range(r) for shape, p in parts for x in p[i * shape[1]:(i + 1) * shape[1]]]

replay("vocab_parallel_serial.sptxt", "serial")
replay("vocab_parallel_tp2.sptxt", "tp2")
serial_loss = load("serial", 0, "loss")[1][0]
tp_loss = [load("tp2", r, "loss")[1][0] for r in (0, 1)]
print(f"loss: serial {serial_loss:.6g}, tp2 ranks {tp_loss[0]:.6g} {tp_loss[1]:.6g}")
for var, join in [("emb_w", rows), ("emb_w_m1", rows), ("emb_w_m2", rows), ("head_w", cols), ("head_w_m1", cols), ("head_w_m2", cols)]:
    whole = load("serial", 0, var)[1]
    put_back = join([load("tp2", r, var) for r in (0, 1)])
    diff = max(abs(a - b) for a, b in zip(whole, put_back))
    print(f"{var}: {len(whole)} values, shards {'agree with' if len(whole) == len(put_back) and diff <= 1e-6 else 'DIFFER from'} serial")
check = subprocess.run([sp_opt, "check", f"{testdata}/jobs/vocab_parallel_tp2.sptxt", f"{testdata}/jobs/vocab_parallel_tp2_pir.sptxt",
                        "--rtol", "0", "--atol", "0"], capture_output=True, text=True)
print(f"legacy vs pir: exit {check.returncode}, {check.stdout.strip()}")
