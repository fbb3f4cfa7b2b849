//! Link options for the `agentbus` binary (Linux, glibc).
//!
//! - Its relative relocations are packed (`DT_RELR`, glibc 2.36 and later):
//!   the table the loader reads at every start shrinks from about a
//!   megabyte to a few kilobytes.
//! - In release builds for x86-64, whose linker is LLD, the functions a
//!   one-shot `agentbus run` executes are laid out together, as
//!   `scripts/run-symbols.order` lists them (made by
//!   `scripts/order-symbols.sh`): such a run then maps the pages of about
//!   two megabytes of code instead of pages scattered over the whole
//!   binary. The list names functions demangled; the linker wrapper
//!   (`scripts/ordered-gcc`, set in `.cargo/config.toml`) turns it into
//!   this build's symbols at every link, so a dependency's new version
//!   leaves the layout as it was. Names the build does not have are
//!   skipped. `scripts/check-layout-list.sh --run` (run by CI) fails when
//!   fewer than 90 % are left, or when a one-shot run of the debug build
//!   executes functions the list was not made with.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let profile = std::env::var("PROFILE").unwrap_or_default();
    let order = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run-symbols.order");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", order.display());
    if target.ends_with("-linux-gnu") {
        println!("cargo:rustc-link-arg-bin=agentbus=-Wl,-z,pack-relative-relocs");
    }
    if target == "x86_64-unknown-linux-gnu" && profile == "release" && order.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=agentbus=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=agentbus=-Wl,--no-warn-symbol-ordering");
    }
}
