//! Tells the tests how optimised the binary they drive is: `tests/it/bounded.rs` holds an
//! optimised `gpuplan` (any opt-level above 0; the dev profile builds at 1) to its CPU
//! bound, and an unoptimised one to a multiple of it.

fn main() {
    let level = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "0".to_string());
    println!("cargo:rustc-env=GPUPLAN_OPT_LEVEL={level}");
    println!("cargo:rerun-if-changed=build.rs");
}
