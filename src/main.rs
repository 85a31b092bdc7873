//! The `fleet` binary: parse, dispatch, exit. Everything else is in the library.

fn main() -> std::process::ExitCode {
    let code = fleet::cli::run(std::env::args_os());
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
}
