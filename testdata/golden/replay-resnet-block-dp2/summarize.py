# Reads `sp-opt replay` output: says, per var, whether both ranks hold the same bytes, and prints
# the loss, accuracy and mean of each var to 4 significant digits (stable across BLAS builds,
# unlike checksums of computed values).
import re, sys
rank, seen = None, {}
for line in sys.stdin:
    if m := re.match(r"rank (\d+)$", line.strip()):
        rank = int(m.group(1))
    elif rank is not None and (m := re.match(r"\s+(\S+)\s+\S+ \[[\d,]*\]\s+checksum (\w+)\s+min \S+\s+max \S+\s+mean (\S+)", line)):
        seen.setdefault(m.group(1), {})[rank] = (m.group(2), float(m.group(3)))
for name, by_rank in seen.items():
    same = len({c for c, _ in by_rank.values()}) == 1
    means = " ".join(f"{by_rank[r][1]:.4g}" for r in sorted(by_rank))
    print(f"{name}: {'same on every rank' if same else 'differs across ranks'}; mean {means}")
