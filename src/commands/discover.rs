//! `gpuplan discover [--format kdl|json] [--node N] [--class C] [--model M] [-o FILE]`:
//! this node's GPUs through NVML, as gpuplan KDL or JSON.

use super::Output;
use super::support::host_name;
use crate::cli::{DataFormat, Format, NamingArgs};
use crate::diag::Diagnostic;
use crate::discover::{self, GpuSource, Naming, nvml};
use crate::source::SourceMap;
use std::path::PathBuf;

pub struct Settings {
    pub naming: NamingArgs,
    pub format: DataFormat,
    pub out: Option<PathBuf>,
}

pub(crate) fn run(s: &Settings, out: &Output) -> u8 {
    match nvml::Nvml::load() {
        Ok(n) => run_with(&n, host_name(), s, out),
        Err(e) => fail(out, e),
    }
}

fn fail(out: &Output, e: discover::SourceError) -> u8 {
    let mut d = Diagnostic::error(e.code, e.message);
    d.help = e.help;
    out.fail(&[d])
}

/// Discovery over any source (the binary passes NVML; tests pass recorded data).
pub fn run_with(src: &dyn GpuSource, host: Option<String>, s: &Settings, out: &Output) -> u8 {
    let snap = match discover::collect(src) {
        Ok(x) => x,
        Err(e) => return fail(out, e),
    };
    let node = match s.naming.node.clone() {
        Some(n) => n,
        None => match host.as_deref().and_then(discover::derive::node_name) {
            Some(n) => n,
            None => {
                let d = Diagnostic::error(
                    discover::GP714,
                    format!(
                        "this host's name `{}` is not a valid node name",
                        host.unwrap_or_default()
                    ),
                )
                .with_help("pass `--node NAME` (lowercase letters, digits, `-` and `.`)");
                out.diagnostics(&SourceMap::new(), &[d], Format::Human);
                return 1;
            }
        },
    };
    let naming = Naming {
        node,
        class: s.naming.class.clone(),
        model: s.naming.model.clone(),
    };
    let (inv, diags) = match discover::inventory("nvml", &snap, &naming) {
        Ok(x) => x,
        Err(d) => {
            out.diagnostics(&SourceMap::new(), &[d], Format::Human);
            return 1;
        }
    };
    out.diagnostics(&SourceMap::new(), &diags, Format::Human);
    let text = match s.format {
        DataFormat::Kdl => crate::import::nvidia_smi::render(&inv, &header(&inv)),
        DataFormat::Json => super::support::to_json(&inv),
    };
    super::support::emit(out, s.out.as_deref(), &text)
}

fn header(inv: &discover::Inventory) -> String {
    let mut h = format!(
        "gpuplan discover (NVML) on {}: driver {}, CUDA {}\n",
        inv.node,
        inv.system.driver_version.as_deref().unwrap_or("?"),
        inv.system.cuda_version.as_deref().unwrap_or("?")
    );
    for g in &inv.gpus {
        h.push_str(&format!(
            "GPU {}: {} {} {}\n",
            g.index,
            g.name.as_deref().unwrap_or("?"),
            g.bus_id.as_deref().unwrap_or("?"),
            g.uuid.as_deref().unwrap_or("")
        ));
    }
    h
}
