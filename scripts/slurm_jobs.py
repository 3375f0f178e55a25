#!/usr/bin/env python3
"""Submits every rendered batch script to a real slurmctld and checks where Slurm puts it.

usage: slurm_jobs.py CHECK_SH SLURM_DIR PLAN_JSON SHOW_JSON

It brings up a throwaway slurmctld and one slurmd per node on the rendered configuration
(`check.sh --nodes`: every node must come up IDLE with its GRES). For each
slurm/workloads/*.sbatch it reads the #SBATCH directives the way sbatch does
(up to the first line that is neither blank nor a comment; words quoted like a shell) and
runs them, through the shared conformance check (`check.sh --probe`, one throwaway
slurmctld and a slurmd per node), as `sbatch --test-only ... --wrap=true`. `--array` is
left out (every task of an array is the same job). A script whose class the plan keeps
under one leaf switch (every planned gang of several nodes spans one leaf) is probed with
`--probe-leaf`, which also requires the nodes Slurm picks to sit under one leaf switch.

Then, for every script, the nodes Slurm picked must satisfy the plan (PLAN_JSON, `gpuplan
plan --format json`; SHOW_JSON, `gpuplan show --format json`, gives each node's GPU
model): the partition is the pool of a node the plan put the class on, as many nodes as
the job asks (one gang's pods), and each picked node has the pool, GPU model and, for a
MIG job, the MIG profile of a node the plan put the class on.

Exit 0 when every script is accepted and placed as planned, 1 otherwise. Reads only the
rendered files and the plan; shares no code with the renderers.
"""
import json
import os
import re
import shlex
import subprocess
import sys


def directives(path):
    """The #SBATCH options of a script, as sbatch reads them."""
    out = []
    for line in open(path):
        s = line.strip()
        if not s or s.startswith("#!"):
            continue
        if not s.startswith("#"):
            break
        if s.startswith("#SBATCH"):
            out.extend(shlex.split(s[len("#SBATCH"):], comments=True))
    return out


def option(args, name):
    for a in args:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return None


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


class Plan:
    """What the plan says about each class: its nodes, their pools and models."""

    def __init__(self, plan, show):
        placement = plan["placement"]
        self.pool = {p["node"]: p.get("pool") or p["mode"] for p in placement["pools"]}
        self.model = {}
        # (node, GPU index) -> its GRES type (its model's short name): a node with GPUs
        # of several models has several types.
        shorts = {k: m.get("short_name", k) for k, m in show.get("models", {}).items()}
        self.gpu_type = {}
        for n in show["nodes"]:
            models = {g.get("model") for g in n["gpus"] if g.get("model")}
            self.model[n["name"]] = models.pop() if len(models) == 1 else None
            for g in n["gpus"]:
                if g.get("model"):
                    self.gpu_type[(n["name"], g["index"])] = shorts.get(g["model"], g["model"])
        self.profiles = {}
        for l in placement.get("mig_layouts", []):
            self.profiles.setdefault(l["node"], set()).update(l["profiles"])
        self.classes = {w["name"]: w for w in placement["workloads"]}

    def nodes_of(self, cls):
        w = self.classes.get(cls, {})
        nodes = set()
        for g in w.get("gangs", []):
            nodes.update(n["node"] for n in g["nodes"])
        for key in ("mig_instances", "shares", "packed"):
            nodes.update(x["node"] for x in w.get(key, []))
        return nodes

    def types_of(self, cls):
        """The GRES types of the GPUs the plan gives whole to `cls`."""
        w = self.classes.get(cls, {})
        used = [(n["node"], i) for g in w.get("gangs", []) for n in g["nodes"] for i in n["gpus"]]
        used += [(x["node"], i) for x in w.get("packed", []) for i in x["gpus"]]
        return {self.gpu_type[u] for u in used if u in self.gpu_type}

    def one_leaf(self, cls):
        gangs = [g for g in self.classes.get(cls, {}).get("gangs", []) if len(g["nodes"]) > 1]
        return bool(gangs) and all(g["span"]["leaves"] == 1 for g in gangs)

    def gang_sizes(self, cls):
        w = self.classes.get(cls, {})
        sizes = {len(g["nodes"]) for g in w.get("gangs", [])}
        if any(w.get(k) for k in ("mig_instances", "shares", "packed")):
            sizes.add(1)
        return sizes


def probes(slurm_dir, plan):
    """(path, class, sbatch args, leaf?) per script."""
    out = []
    wdir = os.path.join(slurm_dir, "workloads")
    for name in sorted(os.listdir(wdir)) if os.path.isdir(wdir) else []:
        if not name.endswith(".sbatch"):
            continue
        path = os.path.join(wdir, name)
        args = [a for a in directives(path) if not a.startswith("--array=")]
        comment = option(args, "comment") or ""
        cls = comment.split("gpuplan.io/class=", 1)[-1]
        out.append((path, cls, args, plan.one_leaf(cls)))
    return out


def check_pick(plan, path, cls, args, nodes, partition):
    """Why the nodes Slurm picked do not satisfy the plan (None when they do)."""
    planned = plan.nodes_of(cls)
    if not planned:
        return f"class `{cls}` has no planned units"
    pools = {plan.pool.get(n) for n in planned}
    if partition not in pools:
        return f"partition {partition}, the plan puts `{cls}` in {sorted(pools)}"
    want = int(option(args, "nodes") or 1)
    if len(nodes) != want or want not in plan.gang_sizes(cls):
        return f"{len(nodes)} node(s) picked, the plan's units of `{cls}` have {sorted(plan.gang_sizes(cls))}"
    shapes = {(plan.pool.get(n), plan.model.get(n)) for n in planned}
    gres = option(args, "gres") or ""
    for n in nodes:
        if (plan.pool.get(n), plan.model.get(n)) not in shapes:
            return f"node {n} ({plan.pool.get(n)}, {plan.model.get(n)}) is not where the plan puts `{cls}`"
        kind = gres.split(":")[1] if gres.startswith("gpu:") and gres.count(":") == 2 else None
        if kind and "g." in kind and kind not in plan.profiles.get(n, set()):
            return f"node {n} has no planned MIG {kind}"
        types = plan.types_of(cls)
        if kind and "g." not in kind and types and kind not in types:
            return f"--gres type {kind}, the plan gives `{cls}` GPUs of type {sorted(types)}"
    return None


def main():
    check_sh, slurm_dir, plan_json, show_json = sys.argv[1:5]
    plan = Plan(json.load(open(plan_json)), json.load(open(show_json)))
    ps = probes(slurm_dir, plan)
    cmd = ["bash", check_sh, "--nodes"]
    for _, _, args, leaf in ps:
        cmd += ["--probe-leaf" if leaf else "--probe", " ".join(args)]
    cmd.append(slurm_dir)
    run = subprocess.run(cmd, capture_output=True, text=True)
    log = run.stdout + run.stderr
    # Each probe's block: its header line, then sbatch's answer.
    blocks = re.split(r"^== (?:leaf )?probe: sbatch --test-only ", log, flags=re.M)[1:]
    failed = run.returncode != 0
    if len(blocks) != len(ps):
        print(log)
        print(f"expected {len(ps)} probes, slurmctld answered {len(blocks)}")
        return 1
    for (path, cls, args, leaf), block in zip(ps, blocks):
        m = re.search(r"on nodes (\S+) in partition (\S+)", block)
        name = os.path.basename(path)
        if not m:
            print(f"FAIL {name}: Slurm did not place it:\n{block.strip()}")
            failed = True
            continue
        nodes, partition = expand(m.group(1)), m.group(2)
        why = check_pick(plan, path, cls, args, nodes, partition)
        if why:
            print(f"FAIL {name}: {why}")
            failed = True
        else:
            where = " (one leaf)" if leaf else ""
            print(f"ok   {name}: {m.group(1)} in {partition}{where}")
    if failed:
        print(log)
        return 1
    print(f"slurm ok: every node up with its GRES; {len(ps)} batch scripts accepted and placed as planned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
