//! The log pipeline's last step: every formatted log line passes the server's redactor
//! before it is written.
//!
//! Weaver's own log lines never carry a secret, but dependencies log text weaver does not
//! choose (the Copilot SDK repeats what its CLI writes to stderr, HTTP clients their
//! errors). Redacting the finished line covers them all. Until the server's redactor exists
//! (start-up), lines pass the built-in rules.

use std::io::Write;
use std::sync::{Arc, OnceLock};

use elsa_ai_host::Redactor;
use tracing_subscriber::fmt::MakeWriter;

/// Where redacted lines go: a fresh writer per line.
type Sink = Arc<dyn Fn() -> Box<dyn Write> + Send + Sync>;

/// A [`MakeWriter`] for `tracing_subscriber::fmt` that redacts each log line, then writes
/// it to its sink (standard output by default). Cheap to clone (shared).
#[derive(Clone)]
pub struct RedactingLogWriter {
    redactor: Arc<OnceLock<Arc<Redactor>>>,
    fallback: Arc<Redactor>,
    sink: Sink,
}

impl std::fmt::Debug for RedactingLogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactingLogWriter")
            .field("redactor_installed", &self.redactor.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Default for RedactingLogWriter {
    fn default() -> Self {
        Self::to(|| Box::new(std::io::stdout()))
    }
}

impl RedactingLogWriter {
    /// A writer whose lines go to the writers `sink` makes.
    pub fn to(sink: impl Fn() -> Box<dyn Write> + Send + Sync + 'static) -> Self {
        Self {
            redactor: Arc::new(OnceLock::new()),
            fallback: Arc::new(Redactor::default()),
            sink: Arc::new(sink),
        }
    }

    /// Redacts every later line with `redactor` (the server's, with its secrets). Only the
    /// first call takes effect: a server has one redactor.
    pub fn install(&self, redactor: Arc<Redactor>) {
        let _ = self.redactor.set(redactor);
    }
}

/// One log line being formatted; redacted and written when dropped.
pub struct RedactedLine {
    text: Vec<u8>,
    redactor: Arc<Redactor>,
    sink: Sink,
}

impl std::fmt::Debug for RedactedLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactedLine").finish_non_exhaustive()
    }
}

impl Write for RedactedLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactedLine {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        let redacted = self.redactor.redact_str(&text);
        // A log line that cannot be written is lost; there is nowhere to report it.
        let _ = (self.sink)().write_all(redacted.as_bytes());
    }
}

impl<'a> MakeWriter<'a> for RedactingLogWriter {
    type Writer = RedactedLine;

    fn make_writer(&'a self) -> Self::Writer {
        RedactedLine {
            text: Vec::with_capacity(256),
            redactor: self.redactor.get().unwrap_or(&self.fallback).clone(),
            sink: self.sink.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_log_line_passes_the_installed_redactor() {
        const SECRET: &str = "configured-secret-in-a-dependency-log";
        let buffer = Buffer::default();
        let writer = RedactingLogWriter::to({
            let buffer = buffer.clone();
            move || Box::new(buffer.clone())
        });
        let subscriber = tracing_subscriber::fmt()
            .with_writer(writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!("before start-up: password=hunter2 and {SECRET}");
            writer.install(Arc::new(
                Redactor::builder().secret(SECRET).build().unwrap(),
            ));
            tracing::warn!(target: "some_dependency", "the CLI said: {SECRET}");
        });
        let log = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2, "{log}");
        assert!(
            !lines[0].contains("hunter2"),
            "built-in rules apply at once: {log}"
        );
        assert!(lines[1].contains("the CLI said: [REDACTED]"), "{log}");
        assert!(!lines[1].contains(SECRET), "{log}");
    }
}
