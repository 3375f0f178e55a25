//! `sacctmgr.sh` as a shell runs it and slurmdbd stores it (reference slurm.md §5):
//! `sacctmgr [-i] add|modify account|qos ...` lines, words shell-quoted; accounts with
//! their `Parent`, `GrpTRES` (`gres/gpu=96,gres/shard=..,cpu=..,mem=..`), allowed `QOS`;
//! QOS with their `GrpTRES`. A parent account's limit covers its children's jobs.

use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, Default)]
pub(crate) struct Account {
    pub parent: Option<String>,
    pub grp: BTreeMap<String, u64>,
    pub qos: BTreeSet<String>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Accounting {
    pub accounts: BTreeMap<String, Account>,
    pub qos: BTreeMap<String, BTreeMap<String, u64>>,
}

/// Words of a shell line: single and double quotes removed, stopping at a redirection,
/// a pipe, `;`, `&&` or `||`.
pub(crate) fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\'' | '"' => {
                let s = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some(c) if c == ch => break,
                        Some(c) => s.push(c),
                        None => return Err("an unclosed quote".into()),
                    }
                }
            }
            c if c.is_whitespace() => out.extend(cur.take()),
            '|' | ';' | '>' | '<' | '&' | '#' if cur.is_none() => return Ok(out),
            '>' | '<' => {
                // `2>&1`: a redirection glued to a word ends the command.
                return Ok(out);
            }
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(cur);
    Ok(out)
}

/// `gres/gpu=96,cpu=10` -> map (`-1` clears).
fn tres(v: &str) -> BTreeMap<String, u64> {
    v.split(',')
        .filter_map(|x| x.split_once('='))
        .filter_map(|(k, n)| {
            Some((
                k.to_ascii_lowercase(),
                super::super::quantity::slurm_mib(n)
                    .filter(|_| k.eq_ignore_ascii_case("mem"))
                    .or_else(|| n.parse().ok())?,
            ))
        })
        .collect()
}

/// Parses the sacctmgr script; problems as `line N: ...`.
pub(crate) fn parse(text: &str) -> (Accounting, Vec<String>) {
    let mut acc = Accounting::default();
    let mut errors = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let w = match words(line) {
            Ok(w) => w,
            Err(e) => {
                errors.push(format!("line {}: {e}", n + 1));
                continue;
            }
        };
        if w.first().map(String::as_str) != Some("sacctmgr") {
            continue;
        }
        let w: Vec<&str> = w[1..]
            .iter()
            .map(String::as_str)
            .filter(|x| !x.starts_with('-'))
            .collect();
        if let Err(e) = command(&w, &mut acc) {
            errors.push(format!("line {}: {e}", n + 1));
        }
    }
    (acc, errors)
}

/// The entity names and `key=value` settings of an `add` or `modify` command.
fn targets<'w>(verb: &str, rest: &'w [&'w str]) -> Result<(Vec<String>, &'w [&'w str]), String> {
    match verb.to_ascii_lowercase().as_str() {
        "add" | "create" => {
            let names = rest
                .first()
                .map(|n| n.split(',').map(String::from).collect())
                .unwrap_or_default();
            Ok((names, rest.get(1..).unwrap_or(&[])))
        }
        "modify" | "update" => {
            let set = rest
                .iter()
                .position(|x| x.eq_ignore_ascii_case("set"))
                .ok_or("modify without `set`")?;
            let names = rest[..set]
                .iter()
                .filter_map(|x| x.split_once('='))
                .filter(|(k, _)| k.eq_ignore_ascii_case("name"))
                .flat_map(|(_, v)| v.split(',').map(String::from))
                .collect();
            Ok((names, &rest[set + 1..]))
        }
        _ => Ok((Vec::new(), &[])),
    }
}

fn command(w: &[&str], acc: &mut Accounting) -> Result<(), String> {
    let (Some(verb), Some(entity)) = (w.first(), w.get(1)) else {
        return Ok(());
    };
    let (names, sets) = targets(verb, &w[2..])?;
    let settings: Vec<(String, &str)> = sets
        .iter()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    for name in names {
        match entity.to_ascii_lowercase().as_str() {
            "account" => {
                let a = acc.accounts.entry(name).or_default();
                for (k, v) in &settings {
                    match k.as_str() {
                        "parent" => a.parent = Some(v.to_string()),
                        "grptres" => a.grp.extend(tres(v)),
                        "qos" => {
                            let list = v.split(',').filter(|q| !q.is_empty());
                            a.qos = list.map(String::from).collect();
                        }
                        _ => {}
                    }
                }
            }
            "qos" => {
                let q = acc.qos.entry(name).or_default();
                for (_, v) in settings.iter().filter(|(k, _)| k == "grptres") {
                    q.extend(tres(v));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

impl Accounting {
    /// An account and its parents (cycles stop).
    pub(crate) fn chain(&self, account: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let mut next = self.accounts.get_key_value(account);
        while let Some((name, a)) = next {
            if out.contains(&name.as_str()) {
                break;
            }
            out.push(name);
            next = a
                .parent
                .as_deref()
                .and_then(|p| self.accounts.get_key_value(p));
        }
        out
    }

    /// The QOS an account may use (its own list, else its nearest parent's); empty:
    /// not restricted here.
    pub(crate) fn allowed_qos(&self, account: &str) -> BTreeSet<String> {
        self.chain(account)
            .iter()
            .map(|a| &self.accounts[*a].qos)
            .find(|q| !q.is_empty())
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sacctmgr_lines() {
        let text = "sacctmgr -i add qos hi >/dev/null 2>&1 || true\nsacctmgr -i add account a Parent=root\nsacctmgr -i modify account where name=a set Fairshare=8 GrpTRES=gres/gpu=16,gres/shard=2000,mem=1G QOS='hi,lo' DefaultQOS=lo\nsacctmgr -i modify qos where name=hi set GrpTRES=gres/gpu=4 Preempt=''\n";
        let (a, e) = parse(text);
        assert!(e.is_empty(), "{e:?}");
        let acc = &a.accounts["a"];
        assert_eq!(acc.grp["gres/gpu"], 16);
        assert_eq!(acc.grp["gres/shard"], 2000);
        assert_eq!(acc.grp["mem"], 1024);
        assert_eq!(acc.qos.len(), 2);
        assert_eq!(a.qos["hi"]["gres/gpu"], 4);
        assert!(parse("sacctmgr add account 'x\n").1.len() == 1);
        assert_eq!(words("a 'b c' d>/dev/null").unwrap(), ["a", "b c"]);
    }
}
