//! Validates Elsa 3 workflow definition files from the command line.
//!
//! ```text
//! cargo run -p elsa-workflows --example validate -- [--catalog CATALOG.json] FILE...
//! ```
//!
//! Prints one JSON object per diagnostic per line (`file`, `severity`, `code`, `message`,
//! `activityId`, `path`) and exits 0 when no file has an Error, 1 when some file has one and
//! 2 when a file cannot be read as an Elsa 3 definition.

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = elsa_workflows::validate::run(
        std::env::args_os().skip(1),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}
