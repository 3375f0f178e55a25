//! Mangled `kubectl get nodes` inputs for `gpuplan import k8s-nodes`, read in-process
//! with a fixed seed (`common::proptest_config`): cut-off JSON and YAML, duplicate keys,
//! hostile label values (long, control characters, path-like, bidi), huge and negative
//! counts. Whatever the input: no panic, every error has a code, the report balances
//! (every node imported or left out), the output is bounded and `fmt`-clean.

use crate::common;

use gpuplan::import::k8s;
use gpuplan::source::SourceMap;
use proptest::prelude::*;

const FIXTURES: &[&str] = &[
    "a100-pcie-mig-mixed.yaml",
    "h100-xe9680.json",
    "gke-a3-mega-tas.json",
    "gb200-eks-clique.yaml",
    "h100-mig-single.json",
];

fn fixture(i: usize) -> String {
    let f = FIXTURES[i % FIXTURES.len()];
    std::fs::read_to_string(format!("tests/fixtures/k8s/{f}")).unwrap()
}

/// Imports `text` in-process and checks the contract's invariants.
fn check(name: &str, text: &str) -> Result<(), TestCaseError> {
    let mut sources = SourceMap::new();
    let file = sources.add(name, text.to_string());
    let (imp, report, diags) = k8s::import(&sources, file, &k8s::Options::default());
    for d in &diags {
        prop_assert!(
            d.code.starts_with("GP7"),
            "uncoded diagnostic: {}",
            d.message
        );
        prop_assert!(
            d.message.len() < 4096,
            "unbounded message: {}",
            d.message.len()
        );
    }
    prop_assert_eq!(
        report.unaccounted(),
        (0, 0),
        "unbalanced report: {:?}",
        report
    );
    let Some(imp) = imp else {
        prop_assert!(diags.iter().any(|d| d.is_error()), "no output and no error");
        return Ok(());
    };
    let kdl = k8s::doc::render(&imp, "gpuplan import k8s-nodes prop");
    prop_assert!(
        kdl.len() <= 64 * text.len() + 64 * 1024,
        "output of {} bytes for {} bytes of input",
        kdl.len(),
        text.len()
    );
    let mut s2 = SourceMap::new();
    let id = s2.add("out.kdl", kdl.clone());
    match gpuplan::fmt::format(id, &kdl) {
        Ok(formatted) => {
            let id = s2.add("out2.kdl", formatted.clone());
            let again = gpuplan::fmt::format(id, &formatted);
            prop_assert_eq!(again.ok(), Some(formatted), "fmt is not idempotent on it");
        }
        Err(e) => prop_assert!(false, "the output is not KDL: {:?}\n{}", e, kdl),
    }
    Ok(())
}

/// Label values an attacker (or a broken node) may set.
fn hostile_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("../../../etc/passwd".to_string()),
        Just("/dev/null".to_string()),
        Just("a\u{0}b\u{1b}[31mred\u{7}".to_string()),
        Just("line\nbreak\r// comment */ /* \"quote\" {brace}".to_string()),
        Just("\u{202e}gnp.exe".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("4294967296".to_string()),
        Just("4000000000".to_string()),
        Just("65".to_string()),
        Just("-1".to_string()),
        Just("1e308".to_string()),
        Just("NaN".to_string()),
        Just("all-1g.10gb".to_string()),
        Just("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb".to_string()),
        "[a-zA-Z0-9.\\-]{0,40}",
        "\\PC{0,64}",
        (1usize..20_000).prop_map(|n| "x".repeat(n)),
    ]
}

/// Keys the importer reads, and some it does not.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("nvidia.com/gpu.product".to_string()),
        Just("nvidia.com/gpu.count".to_string()),
        Just("nvidia.com/gpu.memory".to_string()),
        Just("nvidia.com/gpu.replicas".to_string()),
        Just("nvidia.com/mig.config".to_string()),
        Just("nvidia.com/mig.config.state".to_string()),
        Just("nvidia.com/mig.strategy".to_string()),
        Just("nvidia.com/mig-1g.10gb.count".to_string()),
        Just("nvidia.com/mig-3g.40gb.count".to_string()),
        Just("nvidia.com/cuda.driver-version.full".to_string()),
        Just("nvidia.com/gpu.clique".to_string()),
        Just("network.topology.kubernetes.io/block".to_string()),
        Just("karpenter.sh/nodepool".to_string()),
        "[a-z./\\-]{1,30}",
    ]
}

/// One Node with hostile labels and capacities (JSON text), `dup` labels repeated
/// with another value (duplicate keys: the reader keeps one).
fn hostile_node(
    name: String,
    labels: Vec<(String, String)>,
    caps: Vec<(String, String)>,
    dup: bool,
) -> String {
    let enc = |s: &str| serde_json::to_string(s).unwrap();
    let mut l: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{}: {}", enc(k), enc(v)))
        .collect();
    if dup {
        l.extend(labels.iter().map(|(k, _)| format!("{}: \"1\"", enc(k))));
    }
    let c: Vec<String> = caps
        .iter()
        .map(|(k, v)| format!("{}: {}", enc(k), enc(v)))
        .collect();
    format!(
        "{{\"kind\": \"Node\", \"metadata\": {{\"name\": {}, \"labels\": {{{}}}}}, \"spec\": {{\"taints\": [{{\"key\": {}, \"value\": {}, \"effect\": {}}}]}}, \"status\": {{\"capacity\": {{{}}}}}}}",
        enc(&name),
        l.join(", "),
        enc(labels.first().map_or("k", |x| x.0.as_str())),
        enc(labels.first().map_or("v", |x| x.1.as_str())),
        enc(labels.last().map_or("NoSchedule", |x| x.1.as_str())),
        c.join(", ")
    )
}

fn capacity() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec(
        (
            prop_oneof![
                Just("nvidia.com/gpu".to_string()),
                Just("nvidia.com/mig-1g.10gb".to_string()),
                Just("cpu".to_string()),
                Just("memory".to_string()),
            ],
            hostile_value(),
        ),
        0..4,
    )
}

proptest! {
    #![proptest_config(common::proptest_config(64))]

    /// Every fixture cut at any byte (a char boundary), as JSON or YAML.
    #[test]
    fn truncated_fixtures(i in 0usize..5, frac in 0.0f64..1.0) {
        let text = fixture(i);
        let mut cut = (text.len() as f64 * frac) as usize;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        check(FIXTURES[i], &text[..cut])?;
    }

    /// A fixture with one label's value replaced by a hostile one, in place (both
    /// formats: the replacement is quoted for either).
    #[test]
    fn hostile_values_in_fixtures(i in 0usize..5, which in 0usize..200, v in hostile_value()) {
        let text = fixture(i);
        let quoted = serde_json::to_string(&v).unwrap();
        let mut seen = 0;
        let out: Vec<String> = text
            .lines()
            .map(|l| {
                let hit = l.contains("nvidia.com/") && l.contains(':');
                seen += usize::from(hit);
                match l.split_once(": ") {
                    Some((k, _)) if hit && seen == which % 40 + 1 => {
                        let comma = if l.trim_end().ends_with(',') { "," } else { "" };
                        format!("{k}: {quoted}{comma}")
                    }
                    _ => l.to_string(),
                }
            })
            .collect();
        check(FIXTURES[i], &out.join("\n"))?;
    }

    /// A fixture with one of its lines repeated (duplicate keys, labels, items), in both
    /// formats; a repeated label line with another value too.
    #[test]
    fn duplicated_lines(i in 0usize..5, which in 0usize..400, v in hostile_value()) {
        let text = fixture(i);
        let lines: Vec<&str> = text.lines().collect();
        let k = which % lines.len();
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        out.insert(k, lines[k].to_string());
        check(FIXTURES[i], &out.join("\n"))?;
        if let Some((key, _)) = lines[k].split_once(": ") {
            let comma = if lines[k].trim_end().ends_with(',') { "," } else { "" };
            let quoted = serde_json::to_string(&v).unwrap();
            out[k] = format!("{key}: {quoted}{comma}");
            check(FIXTURES[i], &out.join("\n"))?;
        }
    }

    /// Lists of hostile nodes, with duplicate keys and names.
    #[test]
    fn hostile_nodes(
        nodes in prop::collection::vec(
            (
                prop_oneof![Just("n-1".to_string()), Just("N_2".to_string()), "[a-z0-9\\-]{1,70}", hostile_value()],
                prop::collection::vec((key(), hostile_value()), 0..8),
                capacity(),
                any::<bool>(),
            ),
            0..6,
        ),
        yaml in any::<bool>(),
    ) {
        let items: Vec<String> = nodes
            .into_iter()
            .map(|(n, l, c, d)| hostile_node(n, l, c, d))
            .collect();
        let json = format!("{{\"kind\": \"List\", \"items\": [{}]}}", items.join(", "));
        if yaml {
            // The same document as YAML (flow style: YAML reads JSON); a leading
            // comment makes the reader take the YAML path.
            check("nodes.yaml", &format!("# nodes\n{json}\n"))?;
        } else {
            check("nodes.json", &json)?;
        }
    }
}
