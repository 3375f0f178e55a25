//! The built-in catalog data: every GPU model gpuplan knows, with memory, NVLink, PCI ids,
//! NVML product names and MIG geometry.
//!
//! Sources: `../shared/reference/mig.md` (§2 placement table, §3 A30, §4 names, minimum
//! drivers and `-lgip` memory, §5 PCI ids), `../shared/reference/limits.md` §1 (NVLink)
//! and the `-lgip` fixtures under `../shared/fixtures/nvidia-smi/`.
//!
//! Usable memory (`memory_gib`): where a real `nvidia-smi mig -lgip` transcript gives the
//! value, it is copied and marked `memory_observed: true`. Otherwise it is derived
//! conservatively (rounded down to 0.01 GiB) and marked `false`:
//! - from a sibling model's observed value with the same number of memory slices, scaled
//!   by the ratio of memory per slice (A100-40 and A30 from A100-80, B200 and GB200 from
//!   H200);
//! - a 4g profile has the same memory slices as the 3g one, so the same value;
//! - a 7g profile (8 memory slices) gets twice the 4-slice value; on A100-80, the only
//!   model with an observed 7g, 7g = 79.00 GiB > 2 x 39.25.
//!
//! Short names (Slurm GRES type): one per product family (`a100` for the 40GB and 80GB
//! parts, `h100` for SXM, PCIe and NVL, `h200` for SXM and NVL). A cluster that mixes
//! memory variants of one family declares its own `gpu-model` with another short name.
//!
//! Export and board variants (A800, H800, H100 96GB, PG506) have entries of their own, so
//! they keep their names and NVLink; their MIG tables are those mig-parted's device
//! filters give them (tests/it/mig_parted.rs checks all 27 device ids of its config). The
//! H100 SXM5 94GB (0x2339) is left out: no MIG configuration names it.
//!
//! Older and non-MIG parts (P100, V100, A10, A10G, A16, A40, RTX A6000, L40, RTX 6000 Ada)
//! and H20, GH200, B300: product names and PCI ids as NVML and `lspci` report them;
//! memory as `nvidia-smi` reports `memory.total` on published outputs where one was seen,
//! otherwise derived (see docs/catalog.md, which marks each row).

use super::{GpuSpec, MigProfile, MigSpec, NvlinkSpec};

const OBSERVED: bool = true;
const DERIVED: bool = false;

/// The hardware shape behind a GPU-instance profile ID: identical across models of one
/// geometry, only the name and usable memory differ.
struct Shape {
    id: u32,
    compute_slices: u8,
    memory_slices: u8,
    max_count: u8,
    starts: &'static [u8],
    media_extensions: bool,
    decoders: u8,
    ofa: u8,
}

const fn profile(shape: &Shape, name: &'static str, memory_gib: f64, observed: bool) -> MigProfile {
    MigProfile {
        name,
        id: shape.id,
        compute_slices: shape.compute_slices,
        memory_slices: shape.memory_slices,
        max_count: shape.max_count,
        starts: shape.starts,
        memory_gib,
        memory_observed: observed,
        media_extensions: shape.media_extensions,
        decoders: shape.decoders,
        ofa: shape.ofa,
    }
}

// ---------------------------------------------------------------------------------------
// 8 memory slices / 7 compute slices (A100, H100, H200, B200, GB200): mig.md §2 `-lgipp`.

const STARTS_1SLICE: &[u8] = &[0, 1, 2, 3, 4, 5, 6];
const STARTS_2SLICE: &[u8] = &[0, 2, 4, 6];
const STARTS_2G: &[u8] = &[0, 2, 4];
const STARTS_3G: &[u8] = &[0, 4];
const STARTS_ZERO: &[u8] = &[0];

/// ID 19: `1g` with one memory slice.
const G8_1G: Shape = Shape {
    id: 19,
    compute_slices: 1,
    memory_slices: 1,
    max_count: 7,
    starts: STARTS_1SLICE,
    media_extensions: false,
    decoders: 0,
    ofa: 0,
};
/// ID 20: `1g+me`.
const G8_1G_ME: Shape = Shape {
    id: 20,
    compute_slices: 1,
    memory_slices: 1,
    max_count: 1,
    starts: STARTS_1SLICE,
    media_extensions: true,
    decoders: 0,
    ofa: 0,
};
/// ID 15: `1g` with two memory slices.
const G8_1G_2MEM: Shape = Shape {
    id: 15,
    compute_slices: 1,
    memory_slices: 2,
    max_count: 4,
    starts: STARTS_2SLICE,
    media_extensions: false,
    decoders: 0,
    ofa: 0,
};
/// ID 14: `2g`.
const G8_2G: Shape = Shape {
    id: 14,
    compute_slices: 2,
    memory_slices: 2,
    max_count: 3,
    starts: STARTS_2G,
    media_extensions: false,
    decoders: 0,
    ofa: 0,
};
/// ID 9: `3g`.
const G8_3G: Shape = Shape {
    id: 9,
    compute_slices: 3,
    memory_slices: 4,
    max_count: 2,
    starts: STARTS_3G,
    media_extensions: false,
    decoders: 0,
    ofa: 0,
};
/// ID 5: `4g`.
const G8_4G: Shape = Shape {
    id: 5,
    compute_slices: 4,
    memory_slices: 4,
    max_count: 1,
    starts: STARTS_ZERO,
    media_extensions: false,
    decoders: 0,
    ofa: 0,
};
/// ID 0: `7g`, the whole GPU.
const G8_7G: Shape = Shape {
    id: 0,
    compute_slices: 7,
    memory_slices: 8,
    max_count: 1,
    starts: STARTS_ZERO,
    media_extensions: false,
    decoders: 0,
    ofa: 0,
};

/// `spec` with the names newer drivers print for some of its profiles.
const fn with_driver_names(
    spec: MigSpec,
    driver_names: &'static [(&'static str, &'static str)],
) -> MigSpec {
    MigSpec {
        driver_names,
        ..spec
    }
}

const fn eight_slice(min_driver: &'static str, profiles: &'static [MigProfile]) -> MigSpec {
    MigSpec {
        memory_slices: 8,
        compute_slices: 7,
        max_instances: 7,
        profiles,
        min_driver,
        engines: None,
        driver_names: &[],
    }
}

/// A100 40GB. No -lgip in the reference: halves of the A100-80 values. `1g.10gb` (ID 15)
/// needs R525+ per the User Guide; the model minimum stays R450.
pub(crate) static A100_40_MIG: MigSpec = eight_slice(
    "R450",
    &[
        profile(&G8_1G, "1g.5gb", 4.75, DERIVED),
        profile(&G8_1G_ME, "1g.5gb+me", 4.75, DERIVED),
        profile(&G8_1G_2MEM, "1g.10gb", 9.75, DERIVED),
        profile(&G8_2G, "2g.10gb", 9.75, DERIVED),
        profile(&G8_3G, "3g.20gb", 19.62, DERIVED),
        profile(&G8_4G, "4g.20gb", 19.62, DERIVED),
        profile(&G8_7G, "7g.40gb", 39.50, DERIVED),
    ],
);

/// A100 80GB: mig.md §4 caveat (observed 9.50 / 19.50 / 39.25 / 79.00).
static A100_80_MIG: MigSpec = eight_slice(
    "R450",
    &[
        profile(&G8_1G, "1g.10gb", 9.50, OBSERVED),
        profile(&G8_1G_ME, "1g.10gb+me", 9.50, OBSERVED),
        profile(&G8_1G_2MEM, "1g.20gb", 19.50, OBSERVED),
        profile(&G8_2G, "2g.20gb", 19.50, OBSERVED),
        profile(&G8_3G, "3g.40gb", 39.25, OBSERVED),
        profile(&G8_4G, "4g.40gb", 39.25, OBSERVED),
        profile(&G8_7G, "7g.80gb", 79.00, OBSERVED),
    ],
);

/// H100 80GB (SXM5 and PCIe): mig.md §4 caveat (observed 9.75 / 19.62 / 39.50).
pub(crate) static H100_80_MIG: MigSpec = eight_slice(
    "R525",
    &[
        profile(&G8_1G, "1g.10gb", 9.75, OBSERVED),
        profile(&G8_1G_ME, "1g.10gb+me", 9.75, OBSERVED),
        profile(&G8_1G_2MEM, "1g.20gb", 19.62, OBSERVED),
        profile(&G8_2G, "2g.20gb", 19.62, OBSERVED),
        profile(&G8_3G, "3g.40gb", 39.50, OBSERVED),
        profile(&G8_4G, "4g.40gb", 39.50, OBSERVED),
        profile(&G8_7G, "7g.80gb", 79.00, DERIVED),
    ],
);

/// H100 NVL 94GB: fixture `mig_lgip_H100NVL_94GB` (10.75 / 21.62; 3g.47gb = 46.38 from
/// the mig-parted PR the fixture cites).
static H100_94_MIG: MigSpec = eight_slice(
    "R525",
    &[
        profile(&G8_1G, "1g.12gb", 10.75, OBSERVED),
        profile(&G8_1G_ME, "1g.12gb+me", 10.75, OBSERVED),
        profile(&G8_1G_2MEM, "1g.24gb", 21.62, OBSERVED),
        profile(&G8_2G, "2g.24gb", 21.62, OBSERVED),
        profile(&G8_3G, "3g.47gb", 46.38, OBSERVED),
        profile(&G8_4G, "4g.47gb", 46.38, DERIVED),
        profile(&G8_7G, "7g.94gb", 92.76, DERIVED),
    ],
);

/// H200 141GB (SXM and NVL): fixture `mig_lgip_H200_141GB` (16.00 / 32.25 / 69.50; the
/// 7g row was not captured).
static H200_MIG: MigSpec = eight_slice(
    "R550",
    &[
        profile(&G8_1G, "1g.18gb", 16.00, OBSERVED),
        profile(&G8_1G_ME, "1g.18gb+me", 16.00, OBSERVED),
        profile(&G8_1G_2MEM, "1g.35gb", 32.25, OBSERVED),
        profile(&G8_2G, "2g.35gb", 32.25, OBSERVED),
        profile(&G8_3G, "3g.71gb", 69.50, OBSERVED),
        profile(&G8_4G, "4g.71gb", 69.50, OBSERVED),
        profile(&G8_7G, "7g.141gb", 139.00, DERIVED),
    ],
);

/// B200 180GB: names from the User Guide; shapes expected identical to §2 but no
/// `-lgipp` transcript exists (UNVERIFIED). Memory scaled from H200 by 183359/143771.
static B200_MIG: MigSpec = eight_slice(
    "R570",
    &[
        profile(&G8_1G, "1g.23gb", 20.40, DERIVED),
        profile(&G8_1G_ME, "1g.23gb+me", 20.40, DERIVED),
        profile(&G8_1G_2MEM, "1g.45gb", 41.13, DERIVED),
        profile(&G8_2G, "2g.45gb", 41.13, DERIVED),
        profile(&G8_3G, "3g.90gb", 88.63, DERIVED),
        profile(&G8_4G, "4g.90gb", 88.63, DERIVED),
        profile(&G8_7G, "7g.180gb", 177.26, DERIVED),
    ],
);

/// GB200 186GB: names from mig-parted's config (UNVERIFIED shapes, as B200). Memory
/// scaled from H200 by 189471/143771. Newer drivers print `3g.95gb`, `4g.95gb` and
/// `7g.189gb` for the 4- and 8-slice profiles (mig-parted's config carries both names;
/// other published GB200 resource lists use `7g.189gb`).
static GB200_MIG: MigSpec = with_driver_names(
    eight_slice(
        "R570",
        &[
            profile(&G8_1G, "1g.23gb", 21.08, DERIVED),
            profile(&G8_1G_ME, "1g.23gb+me", 21.08, DERIVED),
            profile(&G8_1G_2MEM, "1g.47gb", 42.50, DERIVED),
            profile(&G8_2G, "2g.47gb", 42.50, DERIVED),
            profile(&G8_3G, "3g.93gb", 91.59, DERIVED),
            profile(&G8_4G, "4g.93gb", 91.59, DERIVED),
            profile(&G8_7G, "7g.186gb", 183.18, DERIVED),
        ],
    ),
    &[
        ("3g.93gb", "3g.95gb"),
        ("4g.93gb", "4g.95gb"),
        ("7g.186gb", "7g.189gb"),
    ],
);

/// H100 96GB family (GH200 96GB, H20): names from the User Guide's GH200 table and
/// mig-parted's config (mig.md §2, §5); shapes as §2 (UNVERIFIED: no `-lgipp`
/// transcript). Memory scaled from H200 by 97871/143771.
static H100_96_MIG: MigSpec = eight_slice(
    "R535",
    &[
        profile(&G8_1G, "1g.12gb", 10.89, DERIVED),
        profile(&G8_1G_ME, "1g.12gb+me", 10.89, DERIVED),
        profile(&G8_1G_2MEM, "1g.24gb", 21.95, DERIVED),
        profile(&G8_2G, "2g.24gb", 21.95, DERIVED),
        profile(&G8_3G, "3g.48gb", 47.31, DERIVED),
        profile(&G8_4G, "4g.48gb", 47.31, DERIVED),
        profile(&G8_7G, "7g.96gb", 94.62, DERIVED),
    ],
);

/// B300: names from mig-parted's config (mig.md §2); shapes as §2 (UNVERIFIED). Memory
/// scaled from H200 by 275040/143771.
static B300_MIG: MigSpec = eight_slice(
    "R580",
    &[
        profile(&G8_1G, "1g.34gb", 30.60, DERIVED),
        profile(&G8_1G_ME, "1g.34gb+me", 30.60, DERIVED),
        profile(&G8_1G_2MEM, "1g.67gb", 61.69, DERIVED),
        profile(&G8_2G, "2g.67gb", 61.69, DERIVED),
        profile(&G8_3G, "3g.135gb", 132.95, DERIVED),
        profile(&G8_4G, "4g.135gb", 132.95, DERIVED),
        profile(&G8_7G, "7g.269gb", 265.91, DERIVED),
    ],
);

/// GH200 144GB HBM3e: names from mig-parted's config (mig.md §2, UNVERIFIED in the User
/// Guide); shapes as §2. Memory scaled from H200 by 146830/143771.
static GH200_144_MIG: MigSpec = eight_slice(
    "R550",
    &[
        profile(&G8_1G, "1g.18gb", 16.34, DERIVED),
        profile(&G8_1G_ME, "1g.18gb+me", 16.34, DERIVED),
        profile(&G8_1G_2MEM, "1g.36gb", 32.93, DERIVED),
        profile(&G8_2G, "2g.36gb", 32.93, DERIVED),
        profile(&G8_3G, "3g.72gb", 70.97, DERIVED),
        profile(&G8_4G, "4g.72gb", 70.97, DERIVED),
        profile(&G8_7G, "7g.144gb", 141.95, DERIVED),
    ],
);

/// GB300: names from mig-parted's config (mig.md §2; on GB300 `1g.35gb` is the one-slice
/// profile, 7 per GPU, unlike H200's two-slice `1g.35gb`); shapes as §2 (UNVERIFIED).
/// Memory scaled from H200 by 284208/143771. Minimum driver R595 per the User Guide.
static GB300_MIG: MigSpec = eight_slice(
    "R595",
    &[
        profile(&G8_1G, "1g.35gb", 31.62, DERIVED),
        profile(&G8_1G_ME, "1g.35gb+me", 31.62, DERIVED),
        profile(&G8_1G_2MEM, "1g.70gb", 63.75, DERIVED),
        profile(&G8_2G, "2g.70gb", 63.75, DERIVED),
        profile(&G8_3G, "3g.139gb", 137.38, DERIVED),
        profile(&G8_4G, "4g.139gb", 137.38, DERIVED),
        profile(&G8_7G, "7g.278gb", 274.77, DERIVED),
    ],
);

// ---------------------------------------------------------------------------------------
// RTX PRO 6000 Blackwell (GB202): 4 compute slices on a grid of 12 placement units, and
// media engines shared out: 4 NVDEC/NVENC/JPEG sets and 1 OFA. Observed `nvidia-smi mig
// -lgip` and `-lgipp` on an RTX PRO 6000 Blackwell Server Edition (a published
// walkthrough, tests/fixtures/nvidia-smi/SOURCES.md): 1g {0,3,6,9}:3, 2g {0,6}:6,
// 4g {0}:12; the engine columns give `decoders` and `ofa`. `+me.all` takes every engine
// set, so beside it only `-me` profiles fit (mig.md §4; the `_ALL_ME` NVML profiles).

const RTX_1G_STARTS: &[u8] = &[0, 3, 6, 9];
const RTX_2G_STARTS: &[u8] = &[0, 6];

const fn rtx_shape(id: u32, g: u8, max: u8, me: bool, decoders: u8, ofa: u8) -> Shape {
    let (memory_slices, starts) = match g {
        1 => (3, RTX_1G_STARTS),
        2 => (6, RTX_2G_STARTS),
        _ => (12, STARTS_ZERO),
    };
    Shape {
        id,
        compute_slices: g,
        memory_slices,
        max_count: max,
        starts,
        media_extensions: me,
        decoders,
        ofa,
    }
}

static RTX_PRO_6000_MIG: MigSpec = MigSpec {
    memory_slices: 12,
    compute_slices: 4,
    max_instances: 4,
    min_driver: "R580",
    engines: Some((4, 1)),
    driver_names: &[],
    profiles: &[
        profile(
            &rtx_shape(14, 1, 4, false, 1, 0),
            "1g.24gb",
            23.62,
            OBSERVED,
        ),
        profile(
            &rtx_shape(21, 1, 1, true, 1, 1),
            "1g.24gb+me",
            23.62,
            OBSERVED,
        ),
        profile(
            &rtx_shape(47, 1, 4, false, 1, 0),
            "1g.24gb+gfx",
            23.62,
            OBSERVED,
        ),
        profile(
            &rtx_shape(65, 1, 1, false, 4, 1),
            "1g.24gb+me.all",
            23.62,
            OBSERVED,
        ),
        profile(
            &rtx_shape(67, 1, 4, false, 0, 0),
            "1g.24gb-me",
            23.62,
            OBSERVED,
        ),
        profile(&rtx_shape(5, 2, 2, false, 2, 0), "2g.48gb", 47.38, OBSERVED),
        profile(
            &rtx_shape(35, 2, 2, false, 2, 0),
            "2g.48gb+gfx",
            47.38,
            OBSERVED,
        ),
        profile(
            &rtx_shape(64, 2, 1, false, 4, 1),
            "2g.48gb+me.all",
            47.38,
            OBSERVED,
        ),
        profile(
            &rtx_shape(66, 2, 2, false, 0, 0),
            "2g.48gb-me",
            47.38,
            OBSERVED,
        ),
        profile(&rtx_shape(0, 4, 1, false, 4, 1), "4g.96gb", 95.12, OBSERVED),
        profile(
            &rtx_shape(32, 4, 1, false, 4, 1),
            "4g.96gb+gfx",
            95.12,
            OBSERVED,
        ),
    ],
};

// ---------------------------------------------------------------------------------------
// A30: 4 memory slices / 4 compute slices, mig.md §3 (observed `-lgipp`, driver 535).
// The same numeric IDs mean other shapes than on the 8-slice models.

const A30_STARTS_1G: &[u8] = &[0, 1, 2, 3];
const A30_STARTS_2G: &[u8] = &[0, 2];

const A30_1G: Shape = Shape {
    id: 14,
    compute_slices: 1,
    memory_slices: 1,
    max_count: 4,
    starts: A30_STARTS_1G,
    media_extensions: false,
    decoders: 0,
    ofa: 0,
};
const A30_1G_ME: Shape = Shape {
    id: 21,
    compute_slices: 1,
    memory_slices: 1,
    max_count: 1,
    starts: A30_STARTS_1G,
    media_extensions: true,
    decoders: 0,
    ofa: 0,
};
const A30_2G: Shape = Shape {
    id: 5,
    compute_slices: 2,
    memory_slices: 2,
    max_count: 2,
    starts: A30_STARTS_2G,
    media_extensions: false,
    decoders: 0,
    ofa: 0,
};
const A30_2G_ME: Shape = Shape {
    id: 6,
    compute_slices: 2,
    memory_slices: 2,
    max_count: 1,
    starts: A30_STARTS_2G,
    media_extensions: true,
    decoders: 0,
    ofa: 0,
};
const A30_4G: Shape = Shape {
    id: 0,
    compute_slices: 4,
    memory_slices: 4,
    max_count: 1,
    starts: STARTS_ZERO,
    media_extensions: false,
    decoders: 0,
    ofa: 0,
};

/// A30 24GB. Memory scaled from A100-80 by 6/10 GiB per slice (the A30 transcript's
/// memory column is not in the reference). `1g.6gb+me` needs R470+, `2g.12gb+me` R525+.
static A30_MIG: MigSpec = MigSpec {
    memory_slices: 4,
    compute_slices: 4,
    max_instances: 4,
    min_driver: "R460",
    engines: None,
    driver_names: &[],
    profiles: &[
        profile(&A30_1G, "1g.6gb", 5.70, DERIVED),
        profile(&A30_1G_ME, "1g.6gb+me", 5.70, DERIVED),
        profile(&A30_2G, "2g.12gb", 11.70, DERIVED),
        profile(&A30_2G_ME, "2g.12gb+me", 11.70, DERIVED),
        profile(&A30_4G, "4g.24gb", 23.55, DERIVED),
    ],
};

// ---------------------------------------------------------------------------------------
// NVLink (limits.md §1). Bridged PCIe parts carry the bandwidth between a bridged pair;
// whether a bridge is installed is the topology's business (nvlink domains), not the
// model's. Link counts of bridges are derived from bandwidth / 50 GB/s per link.

/// V100 SXM2 (limits.md §1, observed): gen 2, 6 links, ~300 GB/s.
const NVLINK2_V100: NvlinkSpec = NvlinkSpec {
    generation: 2,
    links: 6,
    bandwidth_gbs: 300,
};
/// P100 SXM2: gen 1, 4 links, 160 GB/s (NVIDIA's P100 datasheet; not in limits.md).
const NVLINK1_P100: NvlinkSpec = NvlinkSpec {
    generation: 1,
    links: 4,
    bandwidth_gbs: 160,
};
/// A40 / RTX A6000 NVLink bridge pair: gen 3, 112.5 GB/s per the datasheets (rounded
/// down to 112; 4 links).
const NVLINK3_BRIDGE_112: NvlinkSpec = NvlinkSpec {
    generation: 3,
    links: 4,
    bandwidth_gbs: 112,
};
/// A800 / H800 (export variants): NVLink cut to 400 GB/s (8 links), per NVIDIA's A800 and
/// H800 product pages (not in limits.md).
const NVLINK3_A800: NvlinkSpec = NvlinkSpec {
    generation: 3,
    links: 8,
    bandwidth_gbs: 400,
};
const NVLINK4_H800: NvlinkSpec = NvlinkSpec {
    generation: 4,
    links: 8,
    bandwidth_gbs: 400,
};
/// A100 SXM4 over NVSwitch; also A100 PCIe between a bridged pair (same gen-3 links).
const NVLINK3_A100: NvlinkSpec = NvlinkSpec {
    generation: 3,
    links: 12,
    bandwidth_gbs: 600,
};
/// A30 NVLink bridge: gen 3, 200 GB/s (4 links).
const NVLINK3_A30: NvlinkSpec = NvlinkSpec {
    generation: 3,
    links: 4,
    bandwidth_gbs: 200,
};
/// H100 / H200 SXM5 over NVSwitch.
const NVLINK4_SXM: NvlinkSpec = NvlinkSpec {
    generation: 4,
    links: 18,
    bandwidth_gbs: 900,
};
/// H100 PCIe / H100 NVL bridge pair (limits.md: link count UNVERIFIED).
const NVLINK4_BRIDGE: NvlinkSpec = NvlinkSpec {
    generation: 4,
    links: 12,
    bandwidth_gbs: 600,
};
/// H200 NVL bridge (2- or 4-way, 900 GB/s per NVIDIA's product page; not in limits.md,
/// UNVERIFIED link count).
const NVLINK4_H200_NVL: NvlinkSpec = NvlinkSpec {
    generation: 4,
    links: 18,
    bandwidth_gbs: 900,
};
/// B200 / GB200: 18 NVLink 5 links, 1.8 TB/s.
const NVLINK5: NvlinkSpec = NvlinkSpec {
    generation: 5,
    links: 18,
    bandwidth_gbs: 1800,
};

// ---------------------------------------------------------------------------------------
// Models, in a stable order (family, then memory, then form factor). Bare family aliases
// (`a100`, `h100`, `h200`) name the SXM part (for A100 the 80GB one), the usual meaning
// in cluster specs.

pub(crate) static MODELS: &[GpuSpec] = &[
    GpuSpec {
        id: "p100-sxm2-16gb",
        aliases: &["p100", "p100-sxm2", "tesla-p100"],
        product_names: &["Tesla P100-SXM2-16GB"],
        pci_device_ids: &[0x15F9],
        architecture: "pascal",
        memory_mib: 16280,
        nvlink: Some(NVLINK1_P100),
        mig: None,
        short_name: "p100",
        datacenter: true,
    },
    GpuSpec {
        id: "p100-pcie-16gb",
        aliases: &["p100-pcie"],
        product_names: &["Tesla P100-PCIE-16GB"],
        pci_device_ids: &[0x15F8],
        architecture: "pascal",
        memory_mib: 16280,
        nvlink: None,
        mig: None,
        short_name: "p100",
        datacenter: true,
    },
    GpuSpec {
        id: "v100-sxm2-16gb",
        aliases: &["v100-16gb", "v100-sxm2-16"],
        product_names: &["Tesla V100-SXM2-16GB"],
        pci_device_ids: &[0x1DB1],
        architecture: "volta",
        memory_mib: 16160,
        nvlink: Some(NVLINK2_V100),
        mig: None,
        short_name: "v100",
        datacenter: true,
    },
    GpuSpec {
        id: "v100-sxm2-32gb",
        aliases: &[
            "v100",
            "v100-sxm2",
            "v100-32gb",
            "v100-sxm2-32",
            "tesla-v100",
        ],
        product_names: &["Tesla V100-SXM2-32GB"],
        pci_device_ids: &[0x1DB5],
        architecture: "volta",
        memory_mib: 32510,
        nvlink: Some(NVLINK2_V100),
        mig: None,
        short_name: "v100",
        datacenter: true,
    },
    GpuSpec {
        id: "v100-pcie-16gb",
        aliases: &["v100-pcie", "v100-pcie-16"],
        product_names: &["Tesla V100-PCIE-16GB"],
        pci_device_ids: &[0x1DB4],
        architecture: "volta",
        memory_mib: 16160,
        nvlink: None,
        mig: None,
        short_name: "v100",
        datacenter: true,
    },
    GpuSpec {
        id: "v100-pcie-32gb",
        aliases: &["v100-pcie-32"],
        product_names: &["Tesla V100-PCIE-32GB"],
        pci_device_ids: &[0x1DB6],
        architecture: "volta",
        memory_mib: 32510,
        nvlink: None,
        mig: None,
        short_name: "v100",
        datacenter: true,
    },
    GpuSpec {
        id: "t4-16gb",
        aliases: &["t4", "tesla-t4"],
        product_names: &["Tesla T4"],
        pci_device_ids: &[0x1EB8],
        architecture: "turing",
        memory_mib: 15360,
        nvlink: None,
        mig: None,
        short_name: "t4",
        datacenter: true,
    },
    GpuSpec {
        id: "a10-24gb",
        aliases: &["a10"],
        product_names: &["NVIDIA A10"],
        pci_device_ids: &[0x2236],
        architecture: "ampere",
        memory_mib: 23028,
        nvlink: None,
        mig: None,
        short_name: "a10",
        datacenter: true,
    },
    // AWS's A10 variant (g5 instances).
    GpuSpec {
        id: "a10g-24gb",
        aliases: &["a10g"],
        product_names: &["NVIDIA A10G"],
        pci_device_ids: &[0x2237],
        architecture: "ampere",
        memory_mib: 23028,
        nvlink: None,
        mig: None,
        short_name: "a10g",
        datacenter: true,
    },
    // One of the four GPUs of an A16 board (each its own PCI device).
    GpuSpec {
        id: "a16-16gb",
        aliases: &["a16"],
        product_names: &["NVIDIA A16"],
        pci_device_ids: &[0x25B6],
        architecture: "ampere",
        memory_mib: 15356,
        nvlink: None,
        mig: None,
        short_name: "a16",
        datacenter: true,
    },
    GpuSpec {
        id: "a40-48gb",
        aliases: &["a40"],
        product_names: &["NVIDIA A40"],
        pci_device_ids: &[0x2235],
        architecture: "ampere",
        memory_mib: 46068,
        nvlink: Some(NVLINK3_BRIDGE_112),
        mig: None,
        short_name: "a40",
        datacenter: true,
    },
    // Workstation part: no CUDA forward compatibility.
    GpuSpec {
        id: "rtx-a6000-48gb",
        aliases: &["rtx-a6000", "a6000", "rtxa6000"],
        product_names: &["NVIDIA RTX A6000"],
        pci_device_ids: &[0x2230],
        architecture: "ampere",
        memory_mib: 49140,
        nvlink: Some(NVLINK3_BRIDGE_112),
        mig: None,
        short_name: "a6000",
        datacenter: false,
    },
    // A800: the A100 for export, NVLink cut to 400 GB/s; MIG as A100 (mig-parted's filters).
    GpuSpec {
        id: "a800-pcie-40gb",
        aliases: &["a800-40gb"],
        product_names: &["NVIDIA A800 40GB PCIe", "NVIDIA A800 40GB Active"],
        pci_device_ids: &[0x20F6],
        architecture: "ampere",
        memory_mib: 40960,
        nvlink: Some(NVLINK3_A800),
        mig: Some(&A100_40_MIG),
        short_name: "a800",
        datacenter: true,
    },
    GpuSpec {
        id: "a800-sxm4-80gb",
        aliases: &["a800", "a800-80gb", "a800-sxm4"],
        product_names: &["NVIDIA A800-SXM4-80GB", "A800-SXM4-80GB"],
        pci_device_ids: &[0x20F3],
        architecture: "ampere",
        memory_mib: 81920,
        nvlink: Some(NVLINK3_A800),
        mig: Some(&A100_80_MIG),
        short_name: "a800",
        datacenter: true,
    },
    GpuSpec {
        id: "a800-pcie-80gb",
        aliases: &["a800-pcie"],
        product_names: &["NVIDIA A800 80GB PCIe"],
        pci_device_ids: &[0x20F5],
        architecture: "ampere",
        memory_mib: 81920,
        nvlink: Some(NVLINK3_A800),
        mig: Some(&A100_80_MIG),
        short_name: "a800",
        datacenter: true,
    },
    // PG506-232 (GA100GL board): mig-parted configures it with the 96GB profile names (UNVERIFIED memory).
    GpuSpec {
        id: "pg506-96gb",
        aliases: &["pg506", "pg506-232"],
        product_names: &["NVIDIA PG506-232", "NVIDIA PG506-242"],
        pci_device_ids: &[0x20B6],
        architecture: "ampere",
        memory_mib: 97871,
        nvlink: Some(NVLINK3_A100),
        mig: Some(&H100_96_MIG),
        short_name: "pg506",
        datacenter: true,
    },
    GpuSpec {
        id: "a30-24gb",
        aliases: &["a30"],
        product_names: &["NVIDIA A30"],
        pci_device_ids: &[0x20B7],
        architecture: "ampere",
        memory_mib: 24576,
        nvlink: Some(NVLINK3_A30),
        mig: Some(&A30_MIG),
        short_name: "a30",
        datacenter: true,
    },
    GpuSpec {
        id: "a100-sxm4-40gb",
        aliases: &["a100-40gb", "a100-sxm4-40", "a100-sxm-40gb"],
        product_names: &["NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"],
        pci_device_ids: &[0x20B0],
        architecture: "ampere",
        memory_mib: 40960,
        nvlink: Some(NVLINK3_A100),
        mig: Some(&A100_40_MIG),
        short_name: "a100",
        datacenter: true,
    },
    GpuSpec {
        id: "a100-pcie-40gb",
        aliases: &["a100-pcie-40"],
        product_names: &["NVIDIA A100-PCIE-40GB", "A100-PCIE-40GB"],
        pci_device_ids: &[0x20B1, 0x20F1],
        architecture: "ampere",
        memory_mib: 40960,
        nvlink: Some(NVLINK3_A100),
        mig: Some(&A100_40_MIG),
        short_name: "a100",
        datacenter: true,
    },
    GpuSpec {
        id: "a100-sxm4-80gb",
        aliases: &[
            "a100",
            "a100-80gb",
            "a100-sxm4-80",
            "a100-sxm",
            "a100-sxm-80gb",
        ],
        product_names: &["NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"],
        pci_device_ids: &[0x20B2],
        architecture: "ampere",
        memory_mib: 81920,
        nvlink: Some(NVLINK3_A100),
        mig: Some(&A100_80_MIG),
        short_name: "a100",
        datacenter: true,
    },
    GpuSpec {
        id: "a100-pcie-80gb",
        aliases: &["a100-pcie-80", "a100-80gb-pcie"],
        product_names: &["NVIDIA A100 80GB PCIe"],
        pci_device_ids: &[0x20B5],
        architecture: "ampere",
        memory_mib: 81920,
        nvlink: Some(NVLINK3_A100),
        mig: Some(&A100_80_MIG),
        short_name: "a100",
        datacenter: true,
    },
    GpuSpec {
        id: "h100-sxm5-80gb",
        aliases: &["h100", "h100-sxm", "h100-80gb", "h100-sxm5"],
        product_names: &["NVIDIA H100 80GB HBM3"],
        pci_device_ids: &[0x2330],
        architecture: "hopper",
        memory_mib: 81559,
        nvlink: Some(NVLINK4_SXM),
        mig: Some(&H100_80_MIG),
        short_name: "h100",
        datacenter: true,
    },
    GpuSpec {
        id: "h100-pcie-80gb",
        aliases: &["h100-pcie", "h100-pcie-80"],
        product_names: &["NVIDIA H100 PCIe"],
        pci_device_ids: &[0x2331],
        architecture: "hopper",
        memory_mib: 81559,
        nvlink: Some(NVLINK4_BRIDGE),
        mig: Some(&H100_80_MIG),
        short_name: "h100",
        datacenter: true,
    },
    GpuSpec {
        id: "h100-nvl-94gb",
        aliases: &["h100-nvl", "h100-94gb"],
        product_names: &["NVIDIA H100 NVL"],
        pci_device_ids: &[0x2321],
        architecture: "hopper",
        memory_mib: 95830,
        nvlink: Some(NVLINK4_BRIDGE),
        mig: Some(&H100_94_MIG),
        short_name: "h100",
        datacenter: true,
    },
    // H800: the H100 for export, NVLink cut to 400 GB/s; MIG as H100 80GB (mig-parted's filters).
    GpuSpec {
        id: "h800-sxm5-80gb",
        aliases: &["h800", "h800-sxm", "h800-80gb"],
        product_names: &["NVIDIA H800"],
        pci_device_ids: &[0x2324],
        architecture: "hopper",
        memory_mib: 81559,
        nvlink: Some(NVLINK4_H800),
        mig: Some(&H100_80_MIG),
        short_name: "h800",
        datacenter: true,
    },
    GpuSpec {
        id: "h800-pcie-80gb",
        aliases: &["h800-pcie"],
        product_names: &["NVIDIA H800 PCIe"],
        pci_device_ids: &[0x2322],
        architecture: "hopper",
        memory_mib: 81559,
        nvlink: Some(NVLINK4_H800),
        mig: Some(&H100_80_MIG),
        short_name: "h800",
        datacenter: true,
    },
    GpuSpec {
        id: "h800-nvl-94gb",
        aliases: &["h800-nvl", "h800l"],
        product_names: &["NVIDIA H800 NVL", "NVIDIA H800L 94GB"],
        pci_device_ids: &[0x233A],
        architecture: "hopper",
        memory_mib: 95830,
        nvlink: Some(NVLINK4_BRIDGE),
        mig: Some(&H100_94_MIG),
        short_name: "h800",
        datacenter: true,
    },
    GpuSpec {
        id: "h100-sxm5-96gb",
        aliases: &["h100-96gb"],
        product_names: &["NVIDIA H100 96GB HBM3", "NVIDIA H100 96GB"],
        pci_device_ids: &[0x233D],
        architecture: "hopper",
        memory_mib: 97871,
        nvlink: Some(NVLINK4_SXM),
        mig: Some(&H100_96_MIG),
        short_name: "h100",
        datacenter: true,
    },
    GpuSpec {
        id: "h20-96gb",
        aliases: &["h20"],
        product_names: &["NVIDIA H20"],
        pci_device_ids: &[0x2329],
        architecture: "hopper",
        memory_mib: 97871,
        nvlink: Some(NVLINK4_SXM),
        mig: Some(&H100_96_MIG),
        short_name: "h20",
        datacenter: true,
    },
    // Grace Hopper superchip, 96GB HBM3 (the 480GB/120GB in the name is Grace's LPDDR5X).
    GpuSpec {
        id: "gh200-96gb",
        aliases: &["gh200", "gh200-480gb", "gh200-120gb"],
        product_names: &["NVIDIA GH200 480GB", "NVIDIA GH200 120GB"],
        pci_device_ids: &[0x2342],
        architecture: "hopper",
        memory_mib: 97871,
        nvlink: Some(NVLINK4_SXM),
        mig: Some(&H100_96_MIG),
        short_name: "gh200",
        datacenter: true,
    },
    // GH200 with 144GB HBM3e (memory derived from the 7g.144gb profile name; UNVERIFIED).
    GpuSpec {
        id: "gh200-144gb",
        aliases: &["gh200-144g"],
        product_names: &["NVIDIA GH200 144G HBM3e"],
        pci_device_ids: &[0x2348],
        architecture: "hopper",
        memory_mib: 146830,
        nvlink: Some(NVLINK4_SXM),
        mig: Some(&GH200_144_MIG),
        short_name: "gh200",
        datacenter: true,
    },
    GpuSpec {
        id: "h200-sxm-141gb",
        aliases: &["h200", "h200-sxm", "h200-141gb"],
        product_names: &["NVIDIA H200"],
        pci_device_ids: &[0x2335],
        architecture: "hopper",
        memory_mib: 143771,
        nvlink: Some(NVLINK4_SXM),
        mig: Some(&H200_MIG),
        short_name: "h200",
        datacenter: true,
    },
    GpuSpec {
        id: "h200-nvl-141gb",
        aliases: &["h200-nvl"],
        product_names: &["NVIDIA H200 NVL"],
        pci_device_ids: &[0x233B],
        architecture: "hopper",
        memory_mib: 143771,
        nvlink: Some(NVLINK4_H200_NVL),
        mig: Some(&H200_MIG),
        short_name: "h200",
        datacenter: true,
    },
    GpuSpec {
        id: "l4-24gb",
        aliases: &["l4"],
        product_names: &["NVIDIA L4"],
        pci_device_ids: &[0x27B8],
        architecture: "ada",
        memory_mib: 23034,
        nvlink: None,
        mig: None,
        short_name: "l4",
        datacenter: true,
    },
    GpuSpec {
        id: "l40-48gb",
        aliases: &["l40"],
        product_names: &["NVIDIA L40"],
        pci_device_ids: &[0x26B5],
        architecture: "ada",
        memory_mib: 46068,
        nvlink: None,
        mig: None,
        short_name: "l40",
        datacenter: true,
    },
    // Workstation part: no CUDA forward compatibility.
    GpuSpec {
        id: "rtx-6000-ada-48gb",
        aliases: &["rtx-6000-ada", "rtx6000ada", "rtx6000-ada"],
        product_names: &["NVIDIA RTX 6000 Ada Generation"],
        pci_device_ids: &[0x26B1],
        architecture: "ada",
        memory_mib: 49140,
        nvlink: None,
        mig: None,
        short_name: "rtx6000ada",
        datacenter: false,
    },
    GpuSpec {
        id: "l40s-48gb",
        aliases: &["l40s"],
        product_names: &["NVIDIA L40S"],
        pci_device_ids: &[0x26B9],
        architecture: "ada",
        memory_mib: 46068,
        nvlink: None,
        mig: None,
        short_name: "l40s",
        datacenter: true,
    },
    // B200 memory is approximate (~179 GiB usable of 180 GB nominal).
    GpuSpec {
        id: "b200-180gb",
        aliases: &["b200", "b200-sxm"],
        product_names: &["NVIDIA B200"],
        pci_device_ids: &[0x2901],
        architecture: "blackwell",
        memory_mib: 183359,
        nvlink: Some(NVLINK5),
        mig: Some(&B200_MIG),
        short_name: "b200",
        datacenter: true,
    },
    // GB200 memory is approximate (~185 GiB of 186 GB nominal per GPU).
    GpuSpec {
        id: "gb200-186gb",
        aliases: &["gb200"],
        product_names: &["NVIDIA GB200"],
        pci_device_ids: &[0x2941],
        architecture: "blackwell",
        memory_mib: 189471,
        nvlink: Some(NVLINK5),
        mig: Some(&GB200_MIG),
        short_name: "gb200",
        datacenter: true,
    },
    // B300 memory is approximate (~268.6 GiB usable of 288 GB nominal; UNVERIFIED).
    GpuSpec {
        id: "b300-288gb",
        aliases: &["b300", "b300-sxm", "b300-sxm6"],
        product_names: &["NVIDIA B300 SXM6 AC"],
        pci_device_ids: &[0x3182],
        architecture: "blackwell",
        memory_mib: 275040,
        nvlink: Some(NVLINK5),
        mig: Some(&B300_MIG),
        short_name: "b300",
        datacenter: true,
    },
    // GB300 (NVL72 compute tray): memory derived from the 7g.278gb profile name (UNVERIFIED).
    GpuSpec {
        id: "gb300-288gb",
        aliases: &["gb300"],
        product_names: &["NVIDIA GB300"],
        pci_device_ids: &[0x31C2],
        architecture: "blackwell",
        memory_mib: 284208,
        nvlink: Some(NVLINK5),
        mig: Some(&GB300_MIG),
        short_name: "gb300",
        datacenter: true,
    },
    // RTX PRO 6000 Blackwell Server Edition: 97,887 MiB and the MIG tables observed (nvidia-smi, published walkthrough).
    GpuSpec {
        id: "rtx-pro-6000-blackwell-96gb",
        aliases: &["rtx-pro-6000", "rtx-pro-6000-blackwell", "rtxpro6000"],
        product_names: &["NVIDIA RTX PRO 6000 Blackwell Server Edition"],
        pci_device_ids: &[0x2BB5],
        architecture: "blackwell",
        memory_mib: 97887,
        nvlink: None,
        mig: Some(&RTX_PRO_6000_MIG),
        short_name: "rtxpro6000",
        datacenter: true,
    },
    // Workstation and Max-Q editions: the same MIG tables (User Guide); no CUDA forward compatibility.
    GpuSpec {
        id: "rtx-pro-6000-blackwell-ws-96gb",
        aliases: &["rtx-pro-6000-ws", "rtx-pro-6000-blackwell-ws"],
        product_names: &[
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        ],
        pci_device_ids: &[0x2BB1, 0x2BB4],
        architecture: "blackwell",
        memory_mib: 97887,
        nvlink: None,
        mig: Some(&RTX_PRO_6000_MIG),
        short_name: "rtxpro6000",
        datacenter: false,
    },
];

/// The driver branch a MIG profile needs on a model: the model's MIG minimum, or later
/// for the profiles the User Guide says arrived later (mig.md §3 and §4): `1g.10gb` on the
/// A100 40GB from R525, `1g.6gb+me` on the A30 from R470 and `2g.12gb+me` from R525.
pub fn profile_min_driver(spec: &'static MigSpec, profile: &str) -> u32 {
    let later: [(&'static MigSpec, &str, u32); 3] = [
        (&A100_40_MIG, "1g.10gb", 525),
        (&A30_MIG, "1g.6gb+me", 470),
        (&A30_MIG, "2g.12gb+me", 525),
    ];
    later
        .iter()
        .find(|(s, p, _)| std::ptr::eq(*s, spec) && *p == profile)
        .map(|x| x.2)
        .unwrap_or_else(|| spec.min_driver_branch())
}
