//! Compiles the build's identity into the binary (`csdchar --version`, every result's `tool`
//! block): the git commit and whether the built sources differ from it ("unknown" when built
//! from a tree without git metadata, e.g. a source tarball), the profile and target, and the TLS
//! library from Cargo.lock.

#[path = "build/source.rs"]
mod source;

use std::path::PathBuf;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .parent()
        .and_then(|p| p.parent())
        .expect("crates/cli lies two levels below the workspace root")
        .to_path_buf();
    let built = source::built_paths(&workspace);
    let state = source::source_state(&workspace, "crates/cli/Cargo.toml", &built);
    if let Some(problem) = &state.problem {
        println!(
            "cargo:warning=csdchar: the git commit is unknown ({problem}); results will say \"unknown\""
        );
    }
    let tls = std::fs::read_to_string(workspace.join("Cargo.lock"))
        .ok()
        .and_then(|lock| source::tls_library(&lock))
        .unwrap_or_else(|| "unknown".to_string());
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| "unknown".to_string());
    println!(
        "cargo:rustc-env=CSDCHAR_BUILD_COMMIT={}",
        state.commit.as_deref().unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=CSDCHAR_BUILD_DIRTY={}",
        state
            .dirty
            .map_or("unknown", |d| if d { "true" } else { "false" })
    );
    println!("cargo:rustc-env=CSDCHAR_BUILD_PROFILE={}", env("PROFILE"));
    println!("cargo:rustc-env=CSDCHAR_BUILD_TARGET={}", env("TARGET"));
    println!("cargo:rustc-env=CSDCHAR_BUILD_TLS={tls}");
    // Re-run when the commit moves or a built source changes, and for nothing else: a re-run
    // rebuilds this crate and every test that links it.
    println!("cargo:rerun-if-changed=build.rs");
    for rel in &built {
        println!("cargo:rerun-if-changed={}", workspace.join(rel).display());
    }
    for path in &state.git_watch {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
