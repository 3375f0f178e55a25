//! Batch scripts as `sbatch` reads them: `#SBATCH` directives at the top, up to the
//! first line that is neither blank nor a comment. A job is one gang of `--nodes`
//! nodes, each with `--gres` (per node), `--ntasks-per-node` x `--cpus-per-task` CPUs
//! and `--mem` MiB; `--array` submits it as that many independent jobs; the class is
//! named by `--comment=gpuplan.io/class=<class>`.

use super::super::quantity;
use super::conf::{GresKey, gres_item};

#[derive(Clone, Debug, Default)]
pub(crate) struct Job {
    pub file: String,
    pub class: Option<String>,
    pub name: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub partition: Option<String>,
    /// `--nodes` as (min, max).
    pub nodes: (u32, u32),
    pub ntasks_per_node: u32,
    pub cpus_per_task: u32,
    /// Per node.
    pub gres: Vec<(GresKey, u64)>,
    /// Per node, MiB (`--mem`, or `--mem-per-cpu` x CPUs).
    pub mem: Option<u64>,
    mem_per_gpu: Option<u64>,
    /// Jobs submitted (`--array`), 1 without.
    pub array: u32,
    pub switches: Option<u32>,
    /// `--segment`: nodes per segment (block topology).
    pub segment: Option<u32>,
    pub constraint: Option<String>,
}

impl Job {
    /// CPUs one node of the job asks.
    pub(crate) fn cpus(&self) -> u64 {
        self.ntasks_per_node as u64 * self.cpus_per_task as u64
    }

    /// Memory one node asks, MiB (`None`: not given).
    pub(crate) fn mem(&self) -> Option<u64> {
        self.mem.or_else(|| {
            let gpus: u64 = self
                .gres
                .iter()
                .filter(|((n, _), _)| n == "gpu")
                .map(|(_, c)| c)
                .sum();
            self.mem_per_gpu.map(|m| m * gpus)
        })
    }
}

/// The `#SBATCH` options of a script, in order, as (option, value).
fn directives(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if !t.starts_with('#') {
            break;
        }
        let Some(rest) = line.strip_prefix("#SBATCH") else {
            continue;
        };
        if !rest.starts_with(char::is_whitespace) {
            continue;
        }
        let mut words = arguments(rest).into_iter().peekable();
        while let Some(w) = words.next() {
            let (opt, value) = match w.split_once('=') {
                Some((o, v)) if o.starts_with("--") => (o.to_string(), Some(v.to_string())),
                _ if w.starts_with("--") => (w.clone(), None),
                _ if w.starts_with('-') && w.chars().count() > 2 => {
                    let short: String = w.chars().take(2).collect();
                    let value = w[short.len()..].to_string();
                    (short, Some(value))
                }
                _ => (w.clone(), None),
            };
            let value = value.or_else(|| words.next_if(|n| !n.starts_with('-')));
            out.push((opt, value.unwrap_or_default()));
        }
    }
    out
}

/// The words of an `#SBATCH` line as sbatch splits them (`_get_argument` in
/// `src/sbatch/opt.c`): whitespace separates, single or double quotes group, a
/// backslash escapes the next character; a word starting with `#` ends the line.
fn arguments(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none_or(|c| *c == '#') {
            return out;
        }
        let (mut word, mut quote) = (String::new(), None);
        while let Some(c) = chars.next() {
            match (c, quote) {
                ('\\', _) => word.extend(chars.next()),
                (c, Some(q)) if c == q => quote = None,
                (c, Some(_)) => word.push(c),
                ('"' | '\'', None) => quote = Some(c),
                (c, None) if c.is_whitespace() => break,
                (c, None) => word.push(c),
            }
        }
        out.push(word);
    }
}

/// Reads a batch script.
pub(crate) fn parse(file: &str, text: &str) -> Result<Job, String> {
    let mut j = Job {
        file: file.to_string(),
        nodes: (1, 1),
        ntasks_per_node: 1,
        cpus_per_task: 1,
        array: 1,
        ..Job::default()
    };
    let mut mem_per_cpu = None;
    for (opt, v) in directives(text) {
        if opt == "--mem-per-cpu" {
            mem_per_cpu = Some(size(&opt, &v)?);
        } else {
            option(&mut j, &opt, v)?;
        }
    }
    if let Some(m) = mem_per_cpu {
        j.mem = Some(m * j.cpus());
    }
    Ok(j)
}

fn size(opt: &str, v: &str) -> Result<u64, String> {
    quantity::slurm_mib(v).ok_or(format!("{opt}={v} is not a size"))
}

/// One option of the script into the job.
fn option(j: &mut Job, opt: &str, v: String) -> Result<(), String> {
    let num = |v: &str| {
        v.parse::<u32>()
            .map_err(|_| format!("{opt}={v} is not a number"))
    };
    match opt {
        "--job-name" | "-J" => j.name = Some(v),
        "--comment" => {
            let v = v.trim_matches('"');
            j.class = v.strip_prefix("gpuplan.io/class=").map(String::from);
        }
        "--account" | "-A" => j.account = Some(v),
        "--qos" | "-q" => j.qos = Some(v),
        "--partition" | "-p" if v.contains(',') => {
            return Err(format!("--partition={v}: one partition expected"));
        }
        "--partition" | "-p" => j.partition = Some(v),
        "--nodes" | "-N" => j.nodes = node_range(&v)?,
        "--ntasks-per-node" => j.ntasks_per_node = num(&v)?,
        "--cpus-per-task" | "-c" => j.cpus_per_task = num(&v)?,
        "--gres" => {
            for item in v.split(',').filter(|s| !s.is_empty() && *s != "none") {
                j.gres.push(gres_item(item)?);
            }
        }
        "--gpus-per-node" => j.gres.push(gres_item(&format!("gpu:{v}"))?),
        "--mem" => j.mem = Some(size(opt, &v)?),
        "--mem-per-gpu" => j.mem_per_gpu = Some(size(opt, &v)?),
        "--array" | "-a" => j.array = array(&v)?,
        "--switches" => j.switches = Some(num(v.split('@').next().unwrap_or(""))?),
        "--segment" => j.segment = Some(num(&v)?),
        "--constraint" | "-C" => j.constraint = Some(v),
        _ => {}
    }
    Ok(())
}

fn node_range(v: &str) -> Result<(u32, u32), String> {
    let n = |s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("--nodes={v} is not a node count"))
    };
    match v.split_once('-') {
        Some((a, b)) => Ok((n(a)?, n(b)?)),
        None => Ok((n(v)?, n(v)?)),
    }
}

/// The number of jobs an `--array` spec submits (`0-7`, `1,3,5`, `0-15:4`, `0-7%2`).
pub(crate) fn array(v: &str) -> Result<u32, String> {
    let bad = || format!("--array={v} is not an array spec");
    let spec = v.split('%').next().unwrap_or("");
    let mut count: u64 = 0;
    for part in spec.split(',') {
        let (range, step) = part.split_once(':').unwrap_or((part, "1"));
        let step: u64 = step.parse().ok().filter(|s| *s > 0).ok_or_else(bad)?;
        let (a, b) = range.split_once('-').unwrap_or((range, range));
        let (a, b): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if b < a {
            return Err(bad());
        }
        count += (b - a) / step + 1;
    }
    u32::try_from(count).map_err(|_| bad())
}

/// Whether a node's features satisfy a `--constraint` (`a&b`, `a|b`, `a,b`; brackets
/// and counts are read as plain ANDs).
pub(crate) fn satisfies(constraint: &str, features: &std::collections::BTreeSet<String>) -> bool {
    let c = constraint.replace(['[', ']', '(', ')'], "");
    c.split('|').any(|alt| {
        alt.split(['&', ','])
            .map(|f| f.split('*').next().unwrap_or("").trim())
            .filter(|f| !f.is_empty())
            .all(|f| features.contains(f))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_stop_at_the_first_command() {
        let text = "#!/bin/sh\n# c\n#SBATCH --job-name=x\n#SBATCH --comment=gpuplan.io/class=x\n#SBATCH -N 2 --gres=gpu:h100:8,shard:10\n#SBATCH --array=0-3 --mem=2G\n\nsrun x\n#SBATCH --qos=late\n";
        let j = parse("f", text).unwrap();
        assert_eq!(j.class.as_deref(), Some("x"));
        assert_eq!((j.nodes, j.array, j.mem), ((2, 2), 4, Some(2048)));
        assert_eq!(j.gres.len(), 2);
        assert_eq!(j.qos, None, "after the first command");
        assert_eq!(array("0-15:4").unwrap(), 4);
        assert_eq!(array("1,3,5%2").unwrap(), 3);
        assert!(array("3-1").is_err());
        assert!(parse("f", "#SBATCH --nodes=x\n").is_err());
        // Quotes group and are removed, as sbatch reads them; no panic on odd bytes.
        let j = parse(
            "f",
            "#SBATCH --constraint='h100&leaf 1' -J \"a b\" -\u{e9}x\n",
        )
        .unwrap();
        assert_eq!(j.constraint.as_deref(), Some("h100&leaf 1"));
        assert_eq!(j.name.as_deref(), Some("a b"));
        assert_eq!(super::arguments(" a\\ b 'c' # d"), ["a b", "c"]);
        let f = ["a".to_string(), "b".to_string()].into();
        assert!(satisfies("a&b", &f) && satisfies("c|a", &f) && !satisfies("a&c", &f));
    }
}
