//! NVIDIA's CUDA / driver compatibility data, as published, and the rule gpuplan applies.
//!
//! Sources:
//! - CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions" (Linux
//!   x86_64 driver shipped with each toolkit release) and "Minimum Required Driver Version
//!   for CUDA Minor Version Compatibility" (>= 450.80.02 for 11.x, >= 525.60.13 for 12.x);
//! - docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions:
//!   the R580 branch supports CUDA 13.x "through CUDA minor version compatibility";
//! - CUDA C Programming Guide, compute capabilities, and the toolkit release notes that
//!   added each architecture (sm_80 in 11.0, sm_86 in 11.1, sm_89 and sm_90 in 11.8,
//!   sm_100 in 12.8).
//!
//! The rule ([`min_driver`]): an application built with CUDA X.Y runs on a driver at
//! least the minor-version-compatibility minimum of major X (11 and later); for older
//! releases, on the driver its toolkit shipped with. Minor-version compatibility has
//! limits NVIDIA documents (PTX that needs a newer driver, some APIs), listed in
//! docs/language.md.
//!
//! Forward compatibility ([`forward_compatible`]): a class that declares `cuda "X.Y"
//! compat=#true` ships NVIDIA's `cuda-compat-X-Y` package, which lets it run on an older
//! driver branch than the rule above needs, on data center GPUs only, and only on the
//! branches NVIDIA lists for that package. Source: CUDA Compatibility guide, "Forward
//! Compatibility" (docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html),
//! the warning ("applicable only for systems with NVIDIA Data Center GPUs, select NGC
//! Server Ready SKUs of RTX cards, Jetson boards") and the table under "Use the Right
//! CUDA Forward Compatibility Package" (edition with columns 535+ (CUDA 12.2) to 615+
//! (CUDA 13.4); read from a copy in the code index, id 69711268983), transcribed in
//! [`FORWARD_COMPAT`]. The guide adds: "Branches not listed in the table above are end of
//! life and are not supported targets for compatibility. New Feature Branches are not
//! supported targets for CUDA Forward Compatibility." Earlier editions also listed R470
//! and R550 columns; those branches are end of life now and are left out.

/// One CUDA toolkit release and the Linux x86_64 driver it shipped with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Release {
    /// (major, minor, update)
    pub cuda: (u32, u32, u32),
    pub driver: [u32; 3],
}

const fn r(major: u32, minor: u32, update: u32, driver: [u32; 3]) -> Release {
    Release {
        cuda: (major, minor, update),
        driver,
    }
}

/// Toolkit releases and their drivers (release notes, table "CUDA Toolkit and
/// Corresponding Driver Versions", Linux x86_64).
pub(crate) const RELEASES: &[Release] = &[
    r(10, 0, 0, [410, 48, 0]),
    r(10, 1, 0, [418, 39, 0]),
    r(10, 2, 0, [440, 33, 0]),
    r(11, 0, 0, [450, 36, 6]),
    r(11, 0, 3, [450, 51, 6]),
    r(11, 1, 0, [455, 23, 5]),
    r(11, 2, 0, [460, 27, 3]),
    r(11, 3, 0, [465, 19, 1]),
    r(11, 4, 0, [470, 42, 1]),
    r(11, 5, 0, [495, 29, 5]),
    r(11, 6, 0, [510, 39, 1]),
    r(11, 7, 0, [515, 43, 4]),
    r(11, 8, 0, [520, 61, 5]),
    r(12, 0, 0, [525, 60, 13]),
    r(12, 0, 1, [525, 85, 12]),
    r(12, 1, 0, [530, 30, 2]),
    r(12, 2, 0, [535, 54, 3]),
    r(12, 2, 2, [535, 104, 5]),
    r(12, 3, 0, [545, 23, 6]),
    r(12, 4, 0, [550, 54, 14]),
    r(12, 4, 1, [550, 54, 15]),
    r(12, 5, 0, [555, 42, 2]),
    r(12, 6, 0, [560, 28, 3]),
    r(12, 8, 0, [570, 26, 0]),
    r(12, 9, 0, [575, 51, 3]),
    r(13, 0, 0, [580, 65, 6]),
];

/// Minimum driver for CUDA minor version compatibility, per major release.
pub(crate) const MINOR_COMPAT: &[(u32, [u32; 3])] =
    &[(11, [450, 80, 2]), (12, [525, 60, 13]), (13, [580, 65, 6])];

/// CUDA forward compatibility: each `cuda-compat-X-Y` package (X.Y) and the driver
/// branches NVIDIA marks it compatible ("C") with. A branch marked "N/A" (the package's
/// own branch) needs no package; "X" branches are not listed.
pub(crate) const FORWARD_COMPAT: &[((u32, u32), &[u32])] = &[
    ((12, 3), &[535]),
    ((12, 4), &[535]),
    ((12, 5), &[535]),
    ((12, 6), &[535]),
    ((12, 8), &[535]),
    ((12, 9), &[535, 570]),
    ((13, 0), &[535, 570]),
    ((13, 1), &[535, 570, 580]),
    ((13, 2), &[535, 570, 580, 590]),
    ((13, 3), &[535, 570, 580, 590, 595]),
    ((13, 4), &[535, 570, 580, 590, 595, 610]),
];

/// Whether an application built with CUDA `major.minor` that ships the forward
/// compatibility package runs on `driver` (as declared, the first part being the branch)
/// on a GPU that is (`datacenter`) or is not a data center part.
pub(crate) fn forward_compatible(major: u32, minor: u32, driver: &[u32], datacenter: bool) -> bool {
    let Some(branch) = driver.first() else {
        return false;
    };
    datacenter
        && FORWARD_COMPAT
            .iter()
            .any(|(v, branches)| *v == (major, minor) && branches.contains(branch))
}

/// The driver branches the forward compatibility package of `major.minor` supports.
pub(crate) fn compat_branches(major: u32, minor: u32) -> &'static [u32] {
    FORWARD_COMPAT
        .iter()
        .find(|(v, _)| *v == (major, minor))
        .map(|(_, b)| *b)
        .unwrap_or(&[])
}

/// The first CUDA release (major, minor) that supports an architecture's GPUs.
pub(crate) fn min_cuda_for(architecture: &str) -> Option<(u32, u32)> {
    Some(match architecture {
        "pascal" => (8, 0),
        "volta" => (9, 0),
        "turing" => (10, 0),
        "ampere" => (11, 0),
        "ada" => (11, 8),
        "hopper" => (11, 8),
        "blackwell" => (12, 8),
        _ => return None,
    })
}

/// The last CUDA major release that supports an architecture's GPUs, for architectures
/// a later major dropped: CUDA 13.0 removed Maxwell, Pascal and Volta (offline
/// compilation and library support; CUDA 13.0 release notes), so 12.x is their last.
pub(crate) fn last_cuda_major_for(architecture: &str) -> Option<u32> {
    match architecture {
        "maxwell" | "pascal" | "volta" => Some(12),
        _ => None,
    }
}

/// The oldest driver that runs an application built with CUDA `major.minor`: the
/// minor-version-compatibility minimum of its major (11 and later), else the driver of
/// its first toolkit release. `None` for a release gpuplan does not know.
pub(crate) fn min_driver(major: u32, minor: u32) -> Option<[u32; 3]> {
    if let Some((_, d)) = MINOR_COMPAT.iter().find(|(m, _)| *m == major) {
        // A minor release gpuplan has never heard of is still a 12.x: the rule holds, but
        // only for releases up to the newest known one of the major.
        let newest = RELEASES
            .iter()
            .filter(|r| r.cuda.0 == major)
            .map(|r| r.cuda.1)
            .max()?;
        return (minor <= newest).then_some(*d);
    }
    RELEASES
        .iter()
        .find(|r| r.cuda.0 == major && r.cuda.1 == minor)
        .map(|r| r.driver)
}

/// The toolkit driver of a release (`major.minor`, first update); the tests check the
/// forward-compatibility table against it.
#[cfg(test)]
pub(crate) fn toolkit_driver(major: u32, minor: u32) -> Option<[u32; 3]> {
    RELEASES
        .iter()
        .find(|r| r.cuda.0 == major && r.cuda.1 == minor)
        .map(|r| r.driver)
}

/// Whether `driver` (as declared: 1 to 3 numeric parts) is at least `min`.
pub(crate) fn at_least(driver: &[u32], min: [u32; 3]) -> bool {
    let d = [
        driver.first().copied().unwrap_or(0),
        driver.get(1).copied().unwrap_or(0),
        driver.get(2).copied().unwrap_or(0),
    ];
    d >= min
}

/// `550.54.15`
pub fn driver_text(d: &[u32]) -> String {
    d.iter()
        .enumerate()
        .map(|(i, p)| {
            if i == 2 && *p < 10 {
                format!("{p:02}")
            } else {
                p.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs from the CUDA Toolkit release notes (Linux x86_64).
    #[test]
    fn known_pairs_from_the_release_notes() {
        assert_eq!(toolkit_driver(12, 4), Some([550, 54, 14]));
        assert_eq!(toolkit_driver(12, 0), Some([525, 60, 13]));
        assert_eq!(toolkit_driver(11, 8), Some([520, 61, 5]));
        assert_eq!(toolkit_driver(12, 8), Some([570, 26, 0]));
        assert_eq!(toolkit_driver(11, 0), Some([450, 36, 6]));
        let r = RELEASES.iter().find(|r| r.cuda == (12, 2, 2)).unwrap();
        assert_eq!(r.driver, [535, 104, 5]);
        // Minor version compatibility: 12.x on >= 525.60.13, 11.x on >= 450.80.02.
        assert_eq!(min_driver(12, 4), Some([525, 60, 13]));
        assert_eq!(min_driver(11, 8), Some([450, 80, 2]));
        assert_eq!(min_driver(10, 2), Some([440, 33, 0]));
        assert_eq!(min_driver(12, 99), None);
        assert!(at_least(&[535, 104, 5], [525, 60, 13]));
        assert!(!at_least(&[520, 61, 5], [525, 60, 13]));
        assert!(at_least(&[550], [525, 60, 13]));
        assert_eq!(min_cuda_for("hopper"), Some((11, 8)));
        assert_eq!(min_cuda_for("blackwell"), Some((12, 8)));
    }

    /// Pairs from the forward-compatibility table of NVIDIA's CUDA Compatibility guide.
    #[test]
    fn forward_compatibility_known_pairs() {
        // cuda-compat-13-0 on R535 and R570: C; on R580 it is the native branch (N/A).
        assert!(forward_compatible(13, 0, &[535, 104, 5], true));
        assert!(forward_compatible(13, 0, &[570, 26], true));
        assert!(!forward_compatible(13, 0, &[580, 65, 6], true));
        // cuda-compat-12-8 on R535: C; 12-8 on R570 is N/A; 12-6 on R570: X.
        assert!(forward_compatible(12, 8, &[535], true));
        assert!(!forward_compatible(12, 8, &[570], true));
        assert!(!forward_compatible(12, 6, &[570], true));
        // 12.4 on R535: C (the guide's own example); 12-2 on R535: N/A.
        assert!(forward_compatible(12, 4, &[535], true));
        assert!(!forward_compatible(12, 2, &[535], true));
        // An end-of-life branch (R525, R470) or a New Feature Branch (R545): not listed.
        assert!(!forward_compatible(13, 0, &[525, 60, 13], true));
        assert!(!forward_compatible(12, 4, &[470, 42, 1], true));
        assert!(!forward_compatible(13, 0, &[545], true));
        // Only on data center GPUs.
        assert!(!forward_compatible(13, 0, &[535], false));
        assert_eq!(compat_branches(13, 0), &[535, 570]);
        assert!(compat_branches(11, 8).is_empty());
    }

    #[test]
    fn forward_compat_branches_predate_the_package() {
        for ((major, minor), branches) in FORWARD_COMPAT {
            assert!(!branches.is_empty());
            if let Some(d) = toolkit_driver(*major, *minor) {
                assert!(branches.iter().all(|b| *b < d[0]), "{major}.{minor}");
            }
        }
    }

    #[test]
    fn releases_are_sorted_and_drivers_grow() {
        for w in RELEASES.windows(2) {
            assert!(w[0].cuda < w[1].cuda && w[0].driver < w[1].driver, "{w:?}");
        }
    }

    #[test]
    fn driver_text_keeps_the_padded_patch() {
        assert_eq!(driver_text(&[535, 104, 5]), "535.104.05");
        assert_eq!(driver_text(&[550, 54, 15]), "550.54.15");
    }
}
