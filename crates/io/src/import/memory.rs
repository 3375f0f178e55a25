//! Memory sizes as importers write them: rounded so that identical servers whose
//! kernels reserve a little more or less memory form one node class (docs/import.md).

/// GiB rounded down to a 32nd of their power of two (at least 1 GiB: 1829 -> 1824,
/// 251 -> 248, 31 -> 31), so that identical servers whose kernels reserve a little
/// more or less memory still form one class.
pub(crate) fn coarse_gib(gib: u64) -> u64 {
    let step = (1u64 << gib.max(1).ilog2()) / 32;
    match step {
        0 | 1 => gib,
        s => gib / s * s,
    }
}
