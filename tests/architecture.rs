//! The shape of the code that the design depends on, checked on the source itself.
//!
//! Every change to the queue goes through the tracker layer (`src/tracker/`), where the rules
//! of each request live; only the store (which applies ops) and the op module (which defines
//! them) may name an `OpKind` variant besides (unit-test modules aside). A front end that built an op itself would skip
//! those rules — this test fails the build instead.
//!
//! And every change a command makes is a typed request through one route (`Context::submit`:
//! the server when one answers, else a transaction of the command's own): the command-line
//! front ends never open a write transaction or hold a `Writer` themselves. Nor does any other
//! front end — the supervisor, the merge lane, the importer: write transactions are opened
//! only by the store, the tracker (requests, the claim service, imports), the server (its
//! group commit and the direct route), the journal (which replays ops into a store it
//! rebuilds) and the benchmarks (which build their stores as fixtures).

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

/// The program part of each source file under `dirs` (unit-test modules, at the end of a file
/// by this codebase's convention, may set up a store as they like), as (path, numbered lines).
fn program_lines(dirs: &[&str]) -> Vec<(String, usize, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root.join(dir), &mut files);
    }
    let mut lines = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&file).unwrap();
        let program = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in program.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//") {
                lines.push((relative.clone(), n + 1, code.to_string()));
            }
        }
    }
    lines
}

/// A write transaction opened in a line of code: `store.write(actor, clock, |w| …)` or a
/// `Writer` named (file writes such as `OpenOptions::write(true)` are not).
fn opens_a_write(code: &str) -> bool {
    let calls_write = code.match_indices(".write(").any(|(at, _)| {
        let argument = &code[at + ".write(".len()..];
        !argument.starts_with("true") && !argument.starts_with("false")
    });
    let names_writer = ["Writer<", "Writer::"].iter().any(|name| {
        code.match_indices(name)
            .any(|(at, _)| !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
    });
    calls_write || names_writer
}

#[test]
fn the_command_line_writes_only_through_requests() {
    let lines = program_lines(&["src/cli"]);
    assert!(lines.len() > 5_000, "found the sources ({} lines)", lines.len());
    let offenders: Vec<String> = lines
        .iter()
        .filter(|(_, _, code)| opens_a_write(code))
        .map(|(file, n, code)| format!("{file}:{n}: {code}"))
        .collect();
    assert!(
        offenders.is_empty(),
        "a command opens a write transaction of its own (add a tracker::Request and send it \
         with Context::submit instead):\n{}",
        offenders.join("\n")
    );
}

/// Where a write transaction may be opened, or a `Writer` held.
const WRITERS: [&str; 5] =
    ["src/store/", "src/tracker/", "src/server/", "src/journal/", "src/bench/"];

#[test]
fn only_the_store_layer_opens_write_transactions() {
    let offenders: Vec<String> = program_lines(&["src"])
        .into_iter()
        .filter(|(file, _, _)| !WRITERS.iter().any(|allowed| file.starts_with(allowed)))
        .filter(|(_, _, code)| opens_a_write(code))
        .map(|(file, n, code)| format!("{file}:{n}: {code}"))
        .collect();
    assert!(
        offenders.is_empty(),
        "a front end opens a write transaction of its own (add a tracker::Request and run it \
         with tracker::execute_in, or through the claim service):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_check_for_write_transactions_sees_one() {
    assert!(opens_a_write("let (ids, _) = store.write(\"demo\", Clock::System, |w| {"));
    assert!(opens_a_write("ctx.require_store()?.write(|writer| writer.set_config(k, v))?;"));
    assert!(opens_a_write("fn plan(writer: &mut Writer<'_>) {"));
    assert!(!opens_a_write("OpenOptions::new().create(true).write(true).open(path)"));
    assert!(!opens_a_write("crate::cli::output::write_stdout(&line);"));
    assert!(!opens_a_write("let out = std::io::BufWriter::with_capacity(1 << 20, lock);"));
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

/// The lines of the program under `src/` (outside `except`) that contain any of `needles`.
fn lines_naming(needles: &[&str], except: &[&str]) -> Vec<String> {
    program_lines(&["src"])
        .into_iter()
        .filter(|(file, _, _)| !except.iter().any(|allowed| file.starts_with(allowed)))
        .filter(|(_, _, code)| needles.iter().any(|needle| code.contains(needle)))
        .map(|(file, n, code)| format!("{file}:{n}: {code}"))
        .collect()
}

#[test]
fn the_library_reads_the_environment_in_one_place() {
    let offenders = lines_naming(
        &["std::env::var", "env::vars", "env::var_os", "env::var("],
        &["src/cli/", "src/env.rs", "src/main.rs"],
    );
    assert!(
        offenders.is_empty(),
        "the environment read outside the command line (name the variable in src/env.rs, or \
         read it in src/cli/ and pass the value in):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn clap_stays_in_the_command_line() {
    let offenders = lines_naming(&["clap::", "use clap"], &["src/cli/", "src/main.rs"]);
    assert!(
        offenders.is_empty(),
        "clap named outside src/cli/ (give the enum its names in src/cli/value_enums.rs):\n{}",
        offenders.join("\n")
    );
}
