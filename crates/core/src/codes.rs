//! One registry of every diagnostic code outside the validation rules: discovery and
//! import (`GP7xx`), planning, rendering, saved plans, the state and apply (`GP9xx`).
//! The validation rules (`GP0xx`) are documented by their own registry,
//! [`crate::validate::rules::ALL`]. `gpuplan explain` and docs/codes.md read both;
//! `tests/it/codes.rs` fails when the source uses a code neither registry documents, when
//! a registered code is never used, and when docs/codes.md misses one.

/// A diagnostic code and what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code {
    pub code: &'static str,
    /// Which part of gpuplan reports it.
    pub area: &'static str,
    /// One line: what went wrong.
    pub summary: &'static str,
    /// What to do about it.
    pub help: &'static str,
}

const fn code(
    code: &'static str,
    area: &'static str,
    summary: &'static str,
    help: &'static str,
) -> Code {
    Code {
        code,
        area,
        summary,
        help,
    }
}

/// Every code, sorted.
pub const ALL: &[Code] = &[
    code(
        "GP700",
        "discover",
        "NVML could not be loaded or initialised (no driver, no `libnvidia-ml.so.1`)",
        "run on a node with the NVIDIA driver, or import recorded `nvidia-smi` outputs",
    ),
    code(
        "GP701",
        "discover",
        "an NVML query failed",
        "check the driver (`nvidia-smi`); the message names the query",
    ),
    code(
        "GP702",
        "discover",
        "a GPU is not in the built-in catalog: a `gpu-model` is declared from what was read",
        "review the declared model; name it with `--model` to use a catalog entry",
    ),
    code(
        "GP703",
        "discover",
        "MIG mode is pending a change (current and pending differ)",
        "reset the GPU or reboot the node so the pending mode takes effect, then discover again",
    ),
    code(
        "GP704",
        "import",
        "the output file could not be written",
        "check the path and its folder's permissions",
    ),
    code(
        "GP705",
        "import",
        "an openb CSV row cannot be read",
        "the message names the file and line; compare with the trace's header",
    ),
    code(
        "GP706",
        "import",
        "a file given to `import nvidia-smi` is none of the `nvidia-smi` outputs it reads",
        "give saved outputs of `nvidia-smi -q`, `-q -x`, `topo -m`, `mig -lgip`, `mig -lgi` or `mig -lci`",
    ),
    code(
        "GP707",
        "import",
        "two `nvidia-smi` outputs contradict each other (GPU counts, bus ids, MIG state): not of one machine, or not of one moment",
        "give the outputs of one machine taken together; import each node on its own",
    ),
    code(
        "GP708",
        "import",
        "the file is another `nvidia-smi` output than the importer named (e.g. `mig -lgi` given to `import mig-lgip`)",
        "use the importer the message names, or `import nvidia-smi`, which recognises every kind",
    ),
    code(
        "GP709",
        "import",
        "GPUs the `nvidia-smi -q` report counts (`Attached GPUs`) are not described in it (made with `-i`, or cut): they are left out",
        "capture `nvidia-smi -q` again without `-i`, whole; or pass `--partial` to write the GPUs it describes",
    ),
    code(
        "GP710",
        "import",
        "the input is not the expected `nvidia-smi` output at all",
        "give the output of the command docs/discover.md names",
    ),
    code(
        "GP711",
        "import",
        "the input is truncated: rows, cells or elements the output always has are missing",
        "capture the whole output again",
    ),
    code(
        "GP712",
        "import",
        "a value in the input cannot be read",
        "the span shows the value; capture the output again",
    ),
    code(
        "GP713",
        "import",
        "an incomplete record that carries nothing essential was skipped",
        "nothing to do unless the record mattered; capture the output again",
    ),
    code(
        "GP714",
        "import",
        "the GPU model cannot be told from the input",
        "pass `--model`",
    ),
    code(
        "GP715",
        "import",
        "the `nvidia-smi -q` report lists a GPU twice, or gives one key two different values",
        "import the unedited output of one `nvidia-smi -q` run",
    ),
    code(
        "GP716",
        "import",
        "the files given to `import nvidia-smi` do not describe the node's GPUs (only MIG tables)",
        "add the output of `nvidia-smi -q` (or `-q -x`) of the same machine",
    ),
    code(
        "GP717",
        "import",
        "`gpuplan fmt` refused an importer's output, which is written as generated",
        "a bug: report it with the input; `gpuplan fmt --check` on the written file says what it cannot format",
    ),
    code(
        "GP720",
        "import",
        "a MIG profile name differs from the catalog (driver rename)",
        "the output pins it with `gpu-model { mig-name }`; review it",
    ),
    code(
        "GP721",
        "import",
        "a MIG profile's usable memory differs from the catalog",
        "review the driver version; the catalog's figure is used",
    ),
    code(
        "GP722",
        "import",
        "a MIG profile ID the catalog does not know for this model",
        "review the model named; the profile is left out",
    ),
    code(
        "GP723",
        "import",
        "a node's GPU count is more than one node holds (64): the node is left out",
        "check `nvidia.com/gpu.count` and the `nvidia.com/gpu` capacity; describe the node by hand if it is right",
    ),
    code(
        "GP730",
        "import",
        "the input is not JSON or YAML",
        "give the whole output of `kubectl get nodes -o json` (or `-o yaml`)",
    ),
    code(
        "GP731",
        "import",
        "the input is not a Kubernetes Node nor a List of Nodes",
        "give the output of `kubectl get nodes -o json` (or `-o yaml`)",
    ),
    code(
        "GP732",
        "import",
        "an item of the node list is skipped: not a Node, no name, a name gpuplan cannot use or one listed twice",
        "the message says which; fix the list or ignore the node",
    ),
    code(
        "GP733",
        "import",
        "a node with GPUs has no `nvidia.com/gpu.product` label: its GPUs are imported as the placeholder `gpu-model \"unknown-gpu\"` without memory (flagged; validate refuses it, GP006, until filled in), or, when it shows only MIG devices, the node is left out",
        "deploy GPU Feature Discovery (GPU Operator) and import again, map the GPUs with `--model unknown-gpu=ID`, or fill in the placeholder's memory",
    ),
    code(
        "GP734",
        "import",
        "a GPU product is neither in the catalog nor described by its labels (`nvidia.com/gpu.memory`): declared without memory, or `--model` names neither a catalog model nor a model name",
        "fill in the declared model's memory (validate refuses it until then, GP006), or map the product with `--model PRODUCT=ID`",
    ),
    code(
        "GP735",
        "import",
        "a GPU product the catalog lacks is declared as a `gpu-model` from its labels",
        "review the declared model; `--model PRODUCT=ID` maps it to a catalog model",
    ),
    code(
        "GP736",
        "import",
        "a node's MIG state cannot be mapped to a per-GPU layout of the catalog: the layout is flagged and the GPUs imported whole (single-strategy MIG devices that make no whole GPUs: the node is left out)",
        "record the layouts with `gpuplan discover` or `gpuplan import nvidia-smi-xml`",
    ),
    code(
        "GP737",
        "import",
        "a label or capacity value of a node cannot be read, or the node's GPU count cannot be told",
        "the span shows the value or what is missing; the field is left out (flagged), or, for the GPU count, the node",
    ),
    code(
        "GP738",
        "import",
        "topology labels do not form a tree of switches, or a `--tier` key is on no node",
        "check the labels; `--tier TIER=KEY` chooses the keys",
    ),
    code(
        "GP739",
        "import",
        "a taint or pool is not carried over as it is (invalid effect, a `gpuplan.io/` key, mixed GPU use in one pool)",
        "the message says which; add it by hand if it matters",
    ),
    code(
        "GP740",
        "import",
        "a line of a Slurm file is not `Key=Value` pairs and is skipped",
        "Slurm's files are `Key=Value` pairs separated by spaces",
    ),
    code(
        "GP741",
        "import",
        "a Slurm value cannot be read (a hostlist, a number, a GRES entry)",
        "write hostlists like gpu[001-032] and GRES like gpu:h100:8",
    ),
    code(
        "GP742",
        "import",
        "a Slurm GPU type is not in the catalog: it is declared as a `gpu-model` named after it (memory only when the type names it), or `--model` maps it to a name the catalog lacks",
        "complete the declared `gpu-model` (memory= or base=), or map the type with `--model TYPE=ID` (`--model gpu=ID` for untyped `gpu:N`)",
    ),
    code(
        "GP744",
        "import",
        "an assumption of the Slurm import to check (a family alias, overlapping partitions, nodes under no switch)",
        "read the message; `--model TYPE=ID` or the KDL fixes it",
    ),
    code(
        "GP745",
        "import",
        "MIG devices of a Slurm node cannot be told per GPU",
        "give gres.conf with File/MultipleFiles lines, or import the node's `nvidia-smi -q -x`",
    ),
    code(
        "GP746",
        "import",
        "a part of topology.conf gpuplan cannot represent (deeper than core, switches and nodes mixed)",
        "describe that part of the fabric by hand",
    ),
    code(
        "GP747",
        "import",
        "slurm.conf declares no node",
        "give the cluster's slurm.conf with its NodeName lines (or the file they are `Include`d from)",
    ),
    code(
        "GP748",
        "import",
        "an `Include` of slurm.conf is not beside it and is skipped",
        "copy the included file into slurm.conf's folder",
    ),
    code(
        "GP749",
        "import",
        "`--model TYPE=ID` of `import slurm` names neither a catalog model nor a valid model name",
        "give a catalog id (docs/catalog.md) or a lowercase name of letters, digits and `-` that you declare as a `gpu-model`",
    ),
    code(
        "GP750",
        "import",
        "the import leaves part of the source out (nodes, GPUs, pools, switches...), so nothing is written; with `--partial` what was imported is written, headed by the list of what is missing, and the command exits 2",
        "fix what the other diagnostics say, or pass `--partial`; `--format json` lists every left-out item",
    ),
    code(
        "GP751",
        "import",
        "a node or GPUs of the source are not in the output and the importer stated no reason (a bug of the importer)",
        "please report it with the input; the node is listed as left out",
    ),
    code(
        "GP752",
        "import",
        "Slurm nodes without GPU information (no `Gres=gpu`, no GPU in gres.conf) are imported with their CPUs, memory, partitions and switches; their GPU count is unknown",
        "if they have GPUs, add `gpus N model=\"...\"` to their node-class, or `Gres=gpu:TYPE:N` to slurm.conf and import again",
    ),
    code(
        "GP753",
        "import",
        "gres.conf and slurm.conf disagree about a node's GPUs (a count, GPUs only gres.conf lists)",
        "make `Gres=` and gres.conf agree: slurmd drains a node whose GPUs do not match",
    ),
    code(
        "GP754",
        "import",
        "a hostlist of slurm.conf (partition, NodeSet), gres.conf or topology.conf names nodes no `NodeName` line declares; they are not imported",
        "declare them with a NodeName line or remove them: slurmctld refuses undeclared nodes",
    ),
    code(
        "GP755",
        "import",
        "topology.conf puts a node under two switches; it is kept under the first and the import is incomplete",
        "a node is cabled to one leaf: remove it from one of the two switch lines",
    ),
    code(
        "GP756",
        "import",
        "every node of slurm.conf is left out, so nothing is written; the message counts the reasons by code",
        "fix what the other diagnostics say (`gpuplan explain CODE`)",
    ),
    code(
        "GP757",
        "import",
        "`Include` files of slurm.conf nested deeper than 8 levels or more than 64 files; the rest are skipped",
        "flatten the site's includes into fewer files",
    ),
    code(
        "GP760",
        "fmt",
        "a file `gpuplan fmt` was given does not parse (the syntax errors follow)",
        "fix the syntax errors, then run `gpuplan fmt` again",
    ),
    code(
        "GP761",
        "fmt",
        "formatting would change what the file means or drop a comment, so it is left as it is",
        "report it with the file; meanwhile format it by hand",
    ),
    code(
        "GP762",
        "fmt",
        "a path given to `gpuplan fmt` cannot be read or written",
        "give existing KDL files or folders you can write to",
    ),
    code(
        "GP763",
        "init",
        "`gpuplan init` would overwrite `cluster.kdl`, or cannot write a file",
        "run it in an empty folder, or give one: `gpuplan init DIR`",
    ),
    code(
        "GP764",
        "man",
        "the man pages cannot be written",
        "choose a folder you can write to",
    ),
    code(
        "GP900",
        "command line",
        "an argument is invalid: an unknown code for `explain`, generator options out of range",
        "see the command's `--help`",
    ),
    code(
        "GP901",
        "plan",
        "the plan fails its own independent check (a bug in gpuplan, never valid)",
        "report it with the input files; `--solver greedy` may still plan",
    ),
    code(
        "GP902",
        "plan",
        "the plan could not be saved (`-o PLAN`)",
        "check the path and its folder's permissions",
    ),
    code(
        "GP903",
        "plan",
        "the previous placement (`--previous FILE`) cannot be read",
        "give a saved plan, a state file, or leave `--previous` out",
    ),
    code(
        "GP904",
        "generate",
        "the output folder of `generate` cannot be used: not a folder, not empty, or not writable",
        "choose an empty or new folder, or pass `--force`",
    ),
    code(
        "GP905",
        "plan",
        "the time limit (`--time-limit`, the whole plan's budget) ran out before the plan was made",
        "raise `--time-limit`, or plan a smaller configuration",
    ),
    code(
        "GP910",
        "render",
        "the plan cannot be expressed in a target (a name or value a target does not accept)",
        "the span shows the declaration; rename it or change the value",
    ),
    code(
        "GP911",
        "render",
        "the output folder cannot be written or replaced, or the Slurm version is not one",
        "check the folder; a folder gpuplan did not write must be empty",
    ),
    code(
        "GP912",
        "render",
        "a template failed to render (a bug in gpuplan, never in the input)",
        "report it with the input files",
    ),
    code(
        "GP913",
        "render",
        "the target version named in the KDL is older than what gpuplan renders",
        "upgrade the target before applying its folder, or leave it out",
    ),
    code(
        "GP914",
        "render",
        "the target's scheduler owns no node: nothing is rendered for it",
        "give that scheduler nodes (`pool ... scheduler=`), or leave the target out",
    ),
    code(
        "GP919",
        "render",
        "warning: a target cannot carry part of the plan (without declared authorities: fractions NVIDIA's device plugin cannot share as planned); that part is left out of it",
        "declare the scheduler so that the plan keeps to what it carries, or run the class under another scheduler",
    ),
    code(
        "GP920",
        "state",
        "the state file cannot be read or is not a gpuplan state",
        "restore it from a backup, or move it away to start over",
    ),
    code(
        "GP921",
        "apply",
        "the state is locked by another gpuplan: a live process, another host, or a lock an older gpuplan wrote (the message names host, PID, start time and age)",
        "wait for the other apply; remove the lock by hand only if no gpuplan holds it (a lock of a dead process of this host is taken over by itself, GP929)",
    ),
    code(
        "GP922",
        "apply",
        "the saved plan is stale: the inputs or the state changed since it was made",
        "plan again and review the new plan",
    ),
    code(
        "GP923",
        "apply",
        "the saved plan cannot be read (missing, not JSON, another format version, a digest mismatch)",
        "save one with `gpuplan plan PATH... -o PLAN`",
    ),
    code(
        "GP924",
        "apply",
        "the output folder or the state cannot be written",
        "check the folders and their permissions; nothing was half-written",
    ),
    code(
        "GP925",
        "apply",
        "apply was not confirmed (declined, or no terminal to ask on)",
        "answer `yes`, pass `--auto-approve`, or apply a saved plan",
    ),
    code(
        "GP926",
        "drift",
        "an observation file cannot be read",
        "save one file per node: `discover --format json` or `nvidia-smi mig -lgi`",
    ),
    code(
        "GP927",
        "apply",
        "a path to write (from a renderer, a saved plan or the state) is not a plain relative path inside the output folder",
        "nothing was written; the saved plan or the state was tampered with",
    ),
    code(
        "GP928",
        "apply",
        "a saved plan is not what its own inputs and placement give (edited after `plan -o`, or another gpuplan version)",
        "plan again with this gpuplan and review the new plan",
    ),
    code(
        "GP929",
        "apply",
        "an earlier apply was killed: its stale lock was taken over, its staging folders removed, or the output folder restored",
        "nothing to do: the state it left is valid; the message names the dead process and what was cleaned",
    ),
    code(
        "GP930",
        "plan",
        "a class on spot capacity loses more to interruptions than spot saves (lost work since the last checkpoint plus restarts, at the nodes' prices)",
        "checkpoint more often (the plan shows the Young/Daly interval), shorten the restart, or keep the class off spot with `spot #false`",
    ),
    code(
        "GP931",
        "plan",
        "a class's GPUs idle on checkpoint writes longer than its `max-idle` (storage bandwidth shared by every gang writing at once, or the gangs' NICs)",
        "the message names the limit that binds: add storage bandwidth (or a storage per leaf or pool), checkpoint less often or smaller, or raise `max-idle`",
    ),
    code(
        "GP932",
        "check-render",
        "the rendered folder given to `check-render`, or a file in it, cannot be read (missing, not a folder, a link, a special file, not UTF-8, past the input-bytes limit)",
        "pass the folder `gpuplan render ... --out-dir DIR` wrote; links and special files are never followed",
    ),
    code(
        "GP933",
        "check-render",
        "a rendered file cannot be parsed the way its scheduler reads it (YAML, slurm.conf, gres.conf, topology.conf, sacctmgr.sh, `#SBATCH` lines); also a `parse` violation of the report",
        "re-render the folder; a file gpuplan rendered that does not parse is a renderer bug",
    ),
    code(
        "GP935",
        "apply",
        "a saved plan names an input gpuplan does not read: not a relative path inside the plan's folder, or not a folder or `*.kdl` file",
        "nothing was read; pass the configuration after the plan (`gpuplan apply PLAN PATH...`) or make the plan again",
    ),
    code(
        "GP940",
        "render",
        "warning: a Slurm job spans several nodes of one multi-node NVLink domain but the declared Slurm (before 24.05) has no switch/nvidia_imex, so slurm.conf gives it no IMEX channel",
        "declare Slurm 24.05 or newer (`cluster { slurm version=\"24.05\" }`), or give the jobs IMEX channels with a prolog of your own",
    ),
    code(
        "GP941",
        "render",
        "warning: a Kubernetes-side gang spans several nodes of one multi-node NVLink domain on device-plugin nodes, where no pod gets an IMEX channel (no ComputeDomain)",
        "hand out the nodes' GPUs through DRA (`gpu-allocation \"dra\"`, Kubernetes 1.34+): each such gang then gets a ComputeDomain",
    ),
    code(
        "GP942",
        "render",
        "warning: classes under Kueue claim GPUs through DRA, and the declared Kueue (or none) does not count ResourceClaimTemplate devices by default (from 0.18; 0.14 to 0.17 behind an alpha gate)",
        "declare Kueue 0.18 or newer, or enable DynamicResourceAllocation on 0.14 to 0.17; merge kueue/dra-configuration.yaml into Kueue's Configuration",
    ),
    code(
        "GP943",
        "render",
        "warning: classes under Volcano claim GPUs through DRA, and the declared Volcano (or none) does not cap DRA devices per queue (from 1.15)",
        "declare Volcano 1.15 or newer; the k8s/ ResourceQuotas cap the devices per namespace either way",
    ),
    code(
        "GP944",
        "render",
        "warning: on a DRA node the plan shares one GPU between the replicas of several objects, but a GPU belongs to one ResourceClaim",
        "give each shared class GPUs of its own (fewer replicas per node or more nodes), or keep such classes on device-plugin nodes",
    ),
    code(
        "GP950",
        "render",
        "warning: the declared Volcano release lacks a field that carries part of the plan (Queue `parent` before 1.9, HyperNode and Job `networkTopology` before 1.12); that part is left out of volcano/",
        "declare the Volcano release you run (`cluster { volcano version=... }`), or upgrade Volcano; docs/render.md lists each field's first release",
    ),
    code(
        "GP951",
        "render",
        "warning: the KDL names a KAI Scheduler older than 0.12, which has no kai.scheduler/v1alpha1 Topology (and, before 0.10, no PodGroup preemptibility)",
        "upgrade KAI Scheduler to 0.12 or later before applying kai/",
    ),
    code(
        "GP960",
        "state",
        "the state backend cannot be reached, or an operation on it failed (a connection refused, the server stopped mid-apply, a permission denied)",
        "check the server and the environment's connection settings (GPUPLAN_PG_DSN or PGHOST...); nothing was recorded, and a lock left behind names its holder (`gpuplan force-unlock ID`)",
    ),
    code(
        "GP961",
        "state",
        "the state backend's settings are invalid: no connection in the environment, an invalid connection string or workspace, sslmode=require",
        "set GPUPLAN_PG_DSN, or PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE; credentials come only from the environment",
    ),
    code(
        "GP962",
        "state",
        "`state push` refused: the backend's state belongs to another lineage",
        "push the file to another workspace, or pull the backend's state and apply from there",
    ),
    code(
        "GP963",
        "state",
        "`state push` refused: the file's serial is not newer than the backend's",
        "an apply recorded a newer state since the file was taken: `gpuplan state pull` it instead",
    ),
    code(
        "GP964",
        "state",
        "`force-unlock ID`: the state has no lock with that ID (it has another holder, or none)",
        "give the ID that GP921 or `gpuplan state list` shows; nothing was removed",
    ),
    code(
        "GP965",
        "state",
        "`state show|pull SERIAL`: the backend keeps no such version (or no state at all yet)",
        "`gpuplan state list` shows the versions kept",
    ),
    code(
        "GP966",
        "state",
        "the state was not recorded: the lock was removed (`force-unlock`) or another apply recorded a state while this one ran",
        "nothing was recorded and the output folder is unchanged; make a new plan and apply it",
    ),
    code(
        "GP967",
        "plan",
        "warning: a `moved` rename has nothing to rename: the last applied placement (or no placement at all) has neither its old nor its new name",
        "check the old name against the state (`gpuplan state show`); remove the `moved` once no state of an older name is left",
    ),
];

/// The entry of `code`, if registered here (validation rules: [`crate::validate::rule`]).
pub fn lookup(code: &str) -> Option<&'static Code> {
    ALL.iter().find(|c| c.code.eq_ignore_ascii_case(code))
}

#[cfg(test)]
mod tests {
    use super::ALL;

    #[test]
    fn codes_are_sorted_and_unique() {
        for w in ALL.windows(2) {
            assert!(w[0].code < w[1].code, "{} before {}", w[0].code, w[1].code);
        }
    }
}
