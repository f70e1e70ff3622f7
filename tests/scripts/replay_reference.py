#!/usr/bin/env python3
"""Independent check of replay: recomputes testdata/jobs/collectives_tp4.json in plain Python from
the documented input rule (lib/runtime/inputs.h) and the collective semantics of ops.md, and
compares with `sp-opt replay --dump`. Also checks the --trace file's structure.
Usage: replay_reference.py DUMP_DIR TRACE_FILE"""
import json, math, pathlib, struct, sys

M64 = (1 << 64) - 1

def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)

def fnv1a64(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h

def uniform(seed, name, g):
    h = splitmix64(seed ^ fnv1a64(name))
    return (splitmix64((h + g) & M64) >> 11) * 2.0 ** -52 - 1.0

def f32(v):
    return struct.unpack('<f', struct.pack('<f', v))[0]

def global_input(name, rows, cols, seed=0, scale=1.0):
    return [[f32(uniform(seed, name, r * cols + c) * scale) for c in range(cols)] for r in range(rows)]

def read_npy(path):
    b = path.read_bytes()
    hlen = b[8] | b[9] << 8
    header = b[10:10 + hlen].decode()
    assert "'<f4'" in header and 'False' in header, header
    shape = tuple(int(x) for x in header.split('(')[1].split(')')[0].split(',') if x.strip())
    n = math.prod(shape)
    flat = struct.unpack('<%df' % n, b[10 + hlen:])
    cols = shape[-1]
    return [list(flat[i:i + cols]) for i in range(0, n, cols)]

def matmul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]

def add(a, b):
    return [[x + y for x, y in zip(r, s)] for r, s in zip(a, b)]

def main():
    dump, trace = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    # x: dims_mapping [0,-1] over a 4-process mesh -> global [16,3], rank r holds rows 4r..4r+3.
    xg = global_input('x', 16, 3)
    x = [xg[4 * r:4 * r + 4] for r in range(4)]
    w = global_input('w', 3, 3, scale=1 / math.sqrt(3))  # persistable: scaled by 1/sqrt(last dim)
    xw = [matmul(x[r], w) for r in range(4)]
    a = xw[0]
    for r in range(1, 4):
        a = add(a, xw[r])
    pair = {0: [0, 2], 2: [0, 2], 1: [3, 1], 3: [3, 1]}  # ring 1 = [0,2], ring 2 = [3,1]
    g = {r: [row for m in pair[r] for row in xw[m]] for r in range(4)}
    total = g[0]
    for r in range(1, 4):
        total = add(total, g[r])
    rs = {r: total[2 * r:2 * r + 2] for r in range(4)}
    bc = rs[2]  # root 2 of ring 0 = rank 2
    av = {r: [[(p + q) / 2 for p, q in zip(r0, r1)] for r0, r1 in zip(x[pair[r][0]], x[pair[r][1]])] for r in range(4)}
    sv = {r: [[v * 2.0 + 0.5 for v in row] for row in av[r]] for r in range(4)}
    want = {r: {'a': a, 'g': g[r], 'rs': rs[r], 'bc': bc, 'mi': bc, 'sv': sv[r], 'w': w} for r in range(4)}
    bad = 0
    for r in range(4):
        for name, ref in want[r].items():
            got = read_npy(dump / ('rank%d' % r) / (name + '.npy'))
            err = max(abs(p - q) for gr, rr in zip(got, ref) for p, q in zip(gr, rr))
            if len(got) != len(ref) or err > 1e-5:
                print('rank %d %s: max error %g' % (r, name, err))
                bad += 1
    t = json.loads(trace.read_text())
    tracks = {e['tid'] for e in t['traceEvents'] if e['ph'] == 'M'}
    colls = [e for e in t['traceEvents'] if e.get('cat') == 'collective']
    if tracks != {0, 1, 2, 3}:
        print('trace: tracks', tracks); bad += 1
    if len(colls) != 4 * 6 or any('ring' not in e['args'] or e['args']['bytes'] <= 0 for e in colls):
        print('trace: collective spans wrong:', len(colls)); bad += 1
    if any(e['ph'] == 'X' and e['dur'] < 0 for e in t['traceEvents']):
        print('trace: negative duration'); bad += 1
    print('replay_reference: %s' % ('ok' if not bad else '%d problems' % bad))
    return 1 if bad else 0

if __name__ == '__main__':
    sys.exit(main())
