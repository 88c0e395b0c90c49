//! The quickstart: a user chats about a sample workflow with its definition attached, the
//! (scripted) provider reads it and proposes a new workflow, the user reviews, approves and
//! applies it, and the audit trail shows every step. One process, the real HTTP API.
//!
//! ```text
//! cargo run -p weaver-examples --example quickstart
//! ```

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    match weaver_examples::quickstart::run(&mut std::io::stdout()).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quickstart failed: {error}");
            ExitCode::FAILURE
        }
    }
}
