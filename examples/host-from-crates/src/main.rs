//! `acme-host`: serves Weaver's API with Acme's stores, provider and tools.
//!
//! ```text
//! ACME_HOST_API_KEY=<16+ characters> acme-host [--listen 127.0.0.1:8080] [--data-dir acme-data]
//! ```
//!
//! `--listen` (env `ACME_HOST_LISTEN`) and `--data-dir` (env `ACME_HOST_DATA`). Prints
//! `listening on http://<address>` once it accepts requests; stops gracefully on Ctrl-C or
//! SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use acme_host::Error;
use elsa_ai_server::Weaver;

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("acme-host: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Error> {
    let mut listen = std::env::var("ACME_HOST_LISTEN").unwrap_or("127.0.0.1:8080".into());
    let mut data = std::env::var("ACME_HOST_DATA").unwrap_or("acme-data".into());
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let target = match flag.as_str() {
            "--listen" => &mut listen,
            "--data-dir" => &mut data,
            _ => return Err(format!("unknown argument {flag}").into()),
        };
        *target = args.next().ok_or(format!("{flag} needs a value"))?;
    }
    let listen: SocketAddr = listen.parse()?;
    let weaver = acme_host::weaver(listen, PathBuf::from(data)).await?;
    for line in weaver.startup_report() {
        eprintln!("{line}");
    }
    let listener = Weaver::listen(listen)?;
    println!("listening on http://{}", listener.local_addr()?);
    weaver.serve(listener, stopped()).await?;
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM.
async fn stopped() {
    #[cfg(unix)]
    if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        return;
    }
    let _ = tokio::signal::ctrl_c().await;
}
