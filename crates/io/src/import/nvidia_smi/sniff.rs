//! Which `nvidia-smi` output a file is, told from its text (`import nvidia-smi` takes
//! them in any order, and the specific importers say when they were given another one).

/// An `nvidia-smi` output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `nvidia-smi -q`: the text report.
    Query,
    /// `nvidia-smi -q -x`: the XML report.
    QueryXml,
    /// `nvidia-smi topo -m`: the topology matrix.
    Topo,
    /// `nvidia-smi mig -lgip`: GPU-instance profiles.
    Lgip,
    /// `nvidia-smi mig -lgi`: the GPU instances that exist.
    Lgi,
    /// `nvidia-smi mig -lci`: the compute instances that exist.
    Lci,
}

impl Kind {
    /// The command that prints it.
    pub fn command(self) -> &'static str {
        match self {
            Kind::Query => "nvidia-smi -q",
            Kind::QueryXml => "nvidia-smi -q -x",
            Kind::Topo => "nvidia-smi topo -m",
            Kind::Lgip => "nvidia-smi mig -lgip",
            Kind::Lgi => "nvidia-smi mig -lgi",
            Kind::Lci => "nvidia-smi mig -lci",
        }
    }

    /// What it says, in a few words.
    pub fn what(self) -> &'static str {
        match self {
            Kind::Query => "the text report",
            Kind::QueryXml => "the XML report",
            Kind::Topo => "the topology matrix",
            Kind::Lgip => "the MIG profiles the driver offers",
            Kind::Lgi => "current GPU instances",
            Kind::Lci => "current compute instances",
        }
    }
}

/// The kind of `text`, or `None` when it is none of them. Only the first 64 KiB are
/// looked at: every kind says what it is in its first lines.
pub(crate) fn sniff(text: &str) -> Option<Kind> {
    let mut end = text.len().min(64 * 1024);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    let lines = || head.lines().map(str::trim);
    if lines().any(|l| l.starts_with("<?xml") || l.starts_with("<nvidia_smi_log")) {
        return Some(Kind::QueryXml);
    }
    if lines().any(|l| l.contains("NVSMI LOG") || l.starts_with("Attached GPUs")) {
        return Some(Kind::Query);
    }
    // A report whose header was cut (an excerpt pasted into an issue): a GPU block,
    // `GPU 00000000:17:00.0`, with its `Product Name`.
    let gpu_block = lines().any(|l| {
        l.strip_prefix("GPU ")
            .and_then(crate::units::normalize_bus_id)
            .is_some()
    });
    let product = lines().any(|l| {
        l.split_once(':')
            .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("Product Name"))
    });
    if gpu_block && product {
        return Some(Kind::Query);
    }
    let table = |title: &str| {
        lines().any(|l| {
            l.trim_matches(|c: char| c == '|' || c.is_whitespace())
                .eq_ignore_ascii_case(title)
        })
    };
    if table("GPU instance profiles:") {
        return Some(Kind::Lgip);
    }
    if table("GPU instances:") || lines().any(|l| l.starts_with("No GPU instances found")) {
        return Some(Kind::Lgi);
    }
    if table("Compute instances:") || lines().any(|l| l.starts_with("No compute instances found")) {
        return Some(Kind::Lci);
    }
    // The header names the GPU columns (after terminal escapes, in R580).
    let topo_header = lines().any(|l| {
        l.split_whitespace().any(|c| c.ends_with("GPU0"))
            && (l.contains("CPU Affinity") || l.contains("GPU1"))
    });
    topo_header.then_some(Kind::Topo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_told_apart() {
        let cases = [
            (
                "\n==============NVSMI LOG==============\n\nAttached GPUs : 1\n",
                Kind::Query,
            ),
            ("<?xml version=\"1.0\" ?>\n<nvidia_smi_log>", Kind::QueryXml),
            ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV18\n", Kind::Topo),
            ("+---+\n| GPU instance profiles:   |\n", Kind::Lgip),
            ("+---+\n| GPU instances:   |\n", Kind::Lgi),
            ("No GPU instances found: Not Found\n", Kind::Lgi),
            (
                "GPU 00000001:04:00.0\n    Product Name      : NVIDIA H100 NVL\n",
                Kind::Query,
            ),
            ("+---+\n| Compute instances:   |\n", Kind::Lci),
        ];
        for (text, kind) in cases {
            assert_eq!(sniff(text), Some(kind), "{text}");
        }
        assert_eq!(sniff("hello\n"), None);
        assert_eq!(sniff(""), None);
    }
}
