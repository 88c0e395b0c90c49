//! A JSON-lines file that several handles share, in this process or in others: appends take
//! the file's exclusive lock and are on disk before they return, readers take its shared lock
//! and only ever read complete lines.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use elsa_ai_abstractions::AiError;

/// One handle on a JSON-lines file.
#[derive(Debug)]
pub(crate) struct JsonLines {
    path: PathBuf,
    file: File,
    /// Where the complete lines this handle has read end.
    read_to: u64,
}

/// The file under this handle's exclusive lock, released when dropped.
pub(crate) struct Exclusive<'a>(&'a mut JsonLines);

impl JsonLines {
    /// Opens (or creates) the file; nothing is read yet.
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        let created = !path.exists();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)?;
        if created {
            // The new file's name is durable too, not only what is written into it.
            let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
            File::open(folder.unwrap_or(Path::new(".")))?.sync_all()?;
        }
        Ok(Self {
            path: path.to_owned(),
            file,
            read_to: 0,
        })
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Every complete line appended since this handle last read, by any handle.
    pub(crate) fn read_new(&mut self) -> io::Result<Vec<String>> {
        self.file.lock_shared()?;
        let lines = self.read_unlocked();
        self.file.unlock()?;
        lines
    }

    /// Takes the exclusive lock and reads what other handles appended since this one last read.
    pub(crate) fn lock(&mut self) -> io::Result<(Exclusive<'_>, Vec<String>)> {
        self.file.lock()?;
        let locked = Exclusive(self);
        let lines = locked.0.read_unlocked()?;
        Ok((locked, lines))
    }

    /// Every complete line of the file at `path`, from the start, under a shared lock of a
    /// handle of its own.
    pub(crate) fn read_all(path: &Path) -> io::Result<Vec<String>> {
        let mut handle = Self {
            path: path.to_owned(),
            file: File::open(path)?,
            read_to: 0,
        };
        handle.read_new()
    }

    fn read_unlocked(&mut self) -> io::Result<Vec<String>> {
        let mut file = &self.file;
        file.seek(SeekFrom::Start(self.read_to))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        // A last line without its newline is being written, or was torn by a crash.
        let complete = text.rfind('\n').map_or(0, |end| end + 1);
        self.read_to += complete as u64;
        Ok(text[..complete].lines().map(str::to_owned).collect())
    }
}

impl Exclusive<'_> {
    /// Appends `line` and syncs it to disk. A tail without its newline was left by a writer
    /// that died mid-append, whose caller was never answered: it is cut off first.
    pub(crate) fn append(&mut self, line: &str) -> io::Result<()> {
        let handle = &mut *self.0;
        if handle.file.metadata()?.len() > handle.read_to {
            handle.file.set_len(handle.read_to)?;
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        (&handle.file).write_all(&bytes)?;
        handle.file.sync_data()?;
        handle.read_to += bytes.len() as u64;
        Ok(())
    }
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        // Closing the file would release the lock too; this handle stays open.
        let _ = self.0.file.unlock();
    }
}

/// The error of a file that cannot be read or written just now (503, so clients may retry).
pub(crate) fn unavailable(path: &Path, error: &io::Error) -> AiError {
    AiError::unavailable(
        "store_unavailable",
        format!("{} cannot be used: {error}", path.display()),
    )
}

/// Reads one line as `T`; a line that is not one is a 500 naming the file.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(path: &Path, line: &str) -> Result<T, AiError> {
    serde_json::from_str(line).map_err(|error| {
        AiError::internal(
            "store_failed",
            format!(
                "{} holds a line that cannot be read: {error}",
                path.display()
            ),
        )
    })
}

/// One record as one line of JSON.
pub(crate) fn line<T: serde::Serialize>(record: &T) -> Result<String, AiError> {
    serde_json::to_string(record)
        .map_err(|error| AiError::internal("store_failed", error.to_string()))
}

/// Runs `work` (file I/O, which blocks) on tokio's blocking pool.
pub(crate) async fn blocking<R: Send + 'static>(
    work: impl FnOnce() -> Result<R, AiError> + Send + 'static,
) -> Result<R, AiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| AiError::internal("store_failed", error.to_string()))?
}
