//! The catalog against NVIDIA's own MIG layouts: mig-parted's default configuration
//! (tests/fixtures/mig-parted, with its source and commit) selects layouts for 27 PCI
//! device ids and ships them to real nodes, so each of them must be valid here:
//! - every device id maps to a catalog model with MIG;
//! - every profile a layout names exists for that model (by its catalog name, or a
//!   name a newer driver prints, `MigSpec::driver_names`);
//! - every layout fits by gpuplan's placement rules.
//!
//! A layout without a `device-filter` applies to every GPU that has its profiles (that
//! is how mig-parted applies it); at least one of the 27 models must have them all.

use gpuplan::catalog::{self, GpuSpec, MigSpec};
use std::collections::{BTreeMap, BTreeSet};

fn config() -> serde_yaml::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mig-parted/config-default.yaml"
    );
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `0x233010DE` -> 0x2330.
fn device_id(filter: &str) -> u16 {
    let v = u32::from_str_radix(filter.trim().trim_start_matches("0x"), 16)
        .unwrap_or_else(|_| panic!("device filter {filter}"));
    assert_eq!(v & 0xFFFF, 0x10DE, "{filter}: NVIDIA's vendor id");
    (v >> 16) as u16
}

fn filters(entry: &serde_yaml::Value) -> Option<Vec<u16>> {
    let f = entry.get("device-filter")?;
    Some(match f {
        serde_yaml::Value::String(s) => vec![device_id(s)],
        serde_yaml::Value::Sequence(v) => {
            v.iter().map(|x| device_id(x.as_str().unwrap())).collect()
        }
        other => panic!("device-filter {other:?}"),
    })
}

/// The layout of an entry: profile names, each repeated by its count.
fn layout(entry: &serde_yaml::Value) -> Vec<String> {
    let Some(devices) = entry.get("mig-devices").and_then(|d| d.as_mapping()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, count) in devices {
        let n = count.as_u64().unwrap();
        for _ in 0..n {
            out.push(name.as_str().unwrap().to_string());
        }
    }
    out
}

fn model(id: u16) -> &'static GpuSpec {
    catalog::lookup_pci(id).unwrap_or_else(|| panic!("device {id:#06x} is not in the catalog"))
}

/// The layout in catalog names, or the first name the model does not know.
fn resolve(spec: &MigSpec, names: &[String]) -> Result<Vec<&'static str>, String> {
    names
        .iter()
        .map(|n| spec.profile_any_name(n).map(|p| p.name).ok_or(n.clone()))
        .collect()
}

fn entries() -> Vec<(String, serde_yaml::Value)> {
    let c = config();
    let configs = c["mig-configs"].as_mapping().unwrap();
    let mut out = Vec::new();
    for (name, list) in configs {
        for entry in list.as_sequence().unwrap() {
            out.push((name.as_str().unwrap().to_string(), entry.clone()));
        }
    }
    out
}

#[test]
fn every_device_id_maps_to_a_catalog_model_with_mig() {
    let ids: BTreeSet<u16> = entries()
        .iter()
        .filter_map(|(_, e)| filters(e))
        .flatten()
        .collect();
    assert_eq!(ids.len(), 27, "mig-parted's config names 27 device ids");
    for id in ids {
        let g = model(id);
        assert!(g.mig.is_some(), "{} ({id:#06x}) has MIG", g.id);
    }
}

#[test]
fn every_filtered_layout_is_valid_for_its_devices() {
    let mut checked = 0;
    for (config, entry) in entries() {
        let Some(ids) = filters(&entry) else { continue };
        let names = layout(&entry);
        for id in ids {
            let g = model(id);
            let spec = g.mig.unwrap();
            let resolved = resolve(spec, &names).unwrap_or_else(|n| {
                panic!(
                    "{config}: `{n}` is not a MIG profile of {} ({id:#06x})",
                    g.id
                )
            });
            if resolved.is_empty() {
                continue;
            }
            if let Err(e) = catalog::fits(spec, &resolved) {
                panic!(
                    "{config}: {resolved:?} refused on {} ({id:#06x}): {e}",
                    g.id
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 41, "only {checked} filtered layouts checked");
}

#[test]
fn every_unfiltered_layout_fits_every_model_that_has_its_profiles() {
    let ids: BTreeSet<u16> = entries()
        .iter()
        .filter_map(|(_, e)| filters(e))
        .flatten()
        .collect();
    // One MIG table per distinct catalog model of the 27 ids.
    let models: BTreeMap<&str, &'static GpuSpec> =
        ids.iter().map(|&i| (model(i).id, model(i))).collect();
    let mut checked = 0;
    for (config, entry) in entries() {
        if filters(&entry).is_some() {
            continue;
        }
        let names = layout(&entry);
        if names.is_empty() {
            continue;
        }
        let mut takers = Vec::new();
        for g in models.values() {
            let spec = g.mig.unwrap();
            if let Ok(resolved) = resolve(spec, &names) {
                if let Err(e) = catalog::fits(spec, &resolved) {
                    panic!("{config}: {names:?} refused on {}: {e}", g.id);
                }
                takers.push(g.id);
            }
        }
        assert!(
            !takers.is_empty(),
            "{config}: no catalog model has every profile of {names:?}"
        );
        checked += 1;
    }
    assert!(checked > 60, "only {checked} unfiltered layouts checked");
}
