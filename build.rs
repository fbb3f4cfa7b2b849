//! Link options for the `agentbus` binary.
//!
//! On glibc Linux its relative relocations are packed (`DT_RELR`, glibc
//! 2.36 and later): the table the loader reads at every start shrinks from
//! about a megabyte to a few kilobytes, and so does a one-shot run's memory.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.ends_with("-linux-gnu") {
        println!("cargo:rustc-link-arg-bin=agentbus=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
