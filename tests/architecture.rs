//! The shape of the code that the design depends on, checked on the source itself.
//!
//! Every change to the queue goes through the tracker layer (`src/tracker/`), where the rules
//! of each request live; only the store (which applies ops) and the op module (which defines
//! them) may name an `OpKind` variant besides (unit-test modules aside). A front end that built an op itself would skip
//! those rules — this test fails the build instead.

use std::path::{Path, PathBuf};

/// Where naming `OpKind::…` in code is allowed.
const ALLOWED: [&str; 3] = ["src/store/", "src/tracker/", "src/op.rs"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_outside_the_store_and_the_tracker_builds_an_op() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(files.len() > 50, "found the sources ({} files)", files.len());
    let mut offenders = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        if ALLOWED.iter().any(|allowed| relative.starts_with(allowed)) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        // Unit-test modules (at the end of a file, by this codebase's convention) may build
        // ops to set up a store; the rule is about the program.
        let program = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in program.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//") && code.contains("OpKind::") {
                offenders.push(format!("{relative}:{}: {}", n + 1, code));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "ops built outside the tracker layer (add a request to src/tracker/ instead):\n{}",
        offenders.join("\n")
    );
}
