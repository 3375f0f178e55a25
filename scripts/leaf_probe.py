#!/usr/bin/env python3
"""Prints a training partition (one named by slurm/examples/*.sbatch) that has two
nodes under one leaf switch of topology.conf, or nothing. Used by conformance.sh."""
import glob
import os
import re
import sys


def expand(expr):
    out, depth, cur, parts = [], 0, "", []
    for ch in expr:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in filter(None, parts):
        m = re.search(r"\[([^\]]*)\]", p)
        if not m:
            out.append(p)
            continue
        for r in m.group(1).split(","):
            a, _, b = r.partition("-")
            for i in range(int(a), int(b or a) + 1):
                out.extend(expand(p[: m.start()] + str(i).zfill(len(a)) + p[m.end():]))
    return out


def main():
    d = sys.argv[1]
    parts = {}
    for line in open(os.path.join(d, "slurm.conf")):
        m = re.match(r"PartitionName=(\S+) Nodes=(\S+)", line)
        if m:
            parts[m.group(1)] = set(expand(m.group(2)))
    leaves = []
    topo = os.path.join(d, "topology.conf")
    if os.path.exists(topo):
        for line in open(topo):
            m = re.match(r"SwitchName=\S+ Nodes=(\S+)", line)
            if m:
                leaves.append(set(expand(m.group(1))))
    training = []
    for f in sorted(glob.glob(os.path.join(d, "examples", "*.sbatch"))):
        m = re.search(r"^#SBATCH --partition=(\S+)", open(f).read(), re.M)
        if m and m.group(1) not in training:
            training.append(m.group(1))
    for p in training:
        if any(len(parts.get(p, set()) & leaf) >= 2 for leaf in leaves):
            print(p)
            return


main()
