//! A `weaver` server process seen from the outside: the command that starts it, the process
//! started with a configuration on a free port, its resident memory, and clients that send a
//! request and then never read the answer.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

/// A `weaver` process on a free port of 127.0.0.1 (with a configuration file, or on weaver's
/// embedded defaults), killed (SIGKILL) when dropped.
pub struct WeaverProcess {
    child: Child,
    address: SocketAddr,
}

impl WeaverProcess {
    /// Writes `config` to `dir/weaver.toml` and starts `binary` (the `weaver` executable) in
    /// `dir` with it (see [`weaver_command`]); returns once the port accepts connections.
    ///
    /// # Panics
    ///
    /// When the process cannot start, or does not listen within a minute.
    pub async fn start(binary: &Path, dir: &Path, config: &str, env: &[(&str, &str)]) -> Self {
        Self::launch(binary, dir, Some(config), env).await
    }

    /// Starts `binary` in `dir` with no configuration file (weaver's embedded defaults: a
    /// SQLite `weaver.db` in `dir`); returns once the port accepts connections.
    ///
    /// # Panics
    ///
    /// When the process cannot start, or does not listen within a minute.
    pub async fn start_without_config(binary: &Path, dir: &Path, env: &[(&str, &str)]) -> Self {
        Self::launch(binary, dir, None, env).await
    }

    async fn launch(binary: &Path, dir: &Path, config: Option<&str>, env: &[(&str, &str)]) -> Self {
        let address = free_loopback_address();
        let mut child = weaver_command(binary, dir, config, &address.to_string(), env)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("weaver starts");
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(address).await.is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("weaver exited before it listened: {status}");
            }
            assert!(Instant::now() < deadline, "weaver did not listen");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self { child, address }
    }

    /// Ends the process with SIGKILL, as a crash would: nothing is flushed or released.
    pub fn kill(self) {
        drop(self);
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://<address>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// `GET path` with the `Authorization` header `authorization`: the JSON answer.
    ///
    /// # Panics
    ///
    /// When the request fails or the answer is not JSON.
    pub async fn get_json(&self, path: &str, authorization: &str) -> serde_json::Value {
        reqwest::Client::new()
            .get(format!("{}{path}", self.base_url()))
            .header("authorization", authorization)
            .send()
            .await
            .expect("the request is answered")
            .json()
            .await
            .expect("a JSON answer")
    }
}

impl Drop for WeaverProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The command that starts the `weaver` executable `binary` in `dir`, listening on `listen`:
/// with `config` written to `dir/weaver.toml` and named by `--config` (`None`: weaver's
/// embedded defaults), and the environment inherited without `WEAVER_CONFIG` and
/// `WEAVER_DEV_KEY`, with `env` added. Standard streams and `RUST_LOG` are the caller's.
///
/// # Panics
///
/// When the configuration cannot be written.
pub fn weaver_command(
    binary: &Path,
    dir: &Path,
    config: Option<&str>,
    listen: &str,
    env: &[(&str, &str)],
) -> Command {
    let mut command = Command::new(binary);
    command.current_dir(dir);
    if let Some(config) = config {
        let path = dir.join("weaver.toml");
        std::fs::write(&path, config).expect("the configuration is written");
        command.arg("--config").arg(path);
    }
    command
        .args(["--listen", listen])
        .env_remove("WEAVER_CONFIG")
        .env_remove("WEAVER_DEV_KEY")
        .envs(env.iter().copied());
    command
}

/// An address on 127.0.0.1 whose port was free when asked.
///
/// # Panics
///
/// When no port can be bound.
pub fn free_loopback_address() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
}

/// The resident memory (`VmRSS`) and its peak (`VmHWM`) of process `pid`, in KiB, read from
/// `/proc/<pid>/status` (Linux); `None` when the process or the fields are not there.
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// The receive buffer a [`stalled_request`] asks the kernel for: as small as it grants, so
/// the server's writes stop after a few KiB.
pub const STALLED_RECEIVE_BUFFER: u32 = 4096;

/// Connects to `address` with a small receive buffer, sends `request` (raw HTTP/1.1 bytes)
/// and returns the connection without reading anything from it: a client that never reads
/// its response. The server's writes stall once the kernel's buffers are full; dropping the
/// connection closes it.
pub async fn stalled_request(address: SocketAddr, request: &[u8]) -> std::io::Result<TcpStream> {
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // Set before connecting, so the window the client advertises is small from the start.
    socket.set_recv_buffer_size(STALLED_RECEIVE_BUFFER)?;
    let mut stream = socket.connect(address).await?;
    stream.write_all(request).await?;
    stream.flush().await?;
    Ok(stream)
}

/// A raw HTTP/1.1 `POST` of a JSON body with an `Authorization` header, for
/// [`stalled_request`].
pub fn json_post(address: SocketAddr, path: &str, authorization: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nhost: {address}\r\nauthorization: {authorization}\r\n\
         content-type: application/json\r\naccept: text/event-stream\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A raw HTTP/1.1 `GET` with an `Authorization` header, for [`stalled_request`].
pub fn get(address: SocketAddr, path: &str, authorization: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nhost: {address}\r\nauthorization: {authorization}\r\n\
         accept: text/event-stream\r\n\r\n"
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[test]
    fn this_process_has_a_resident_memory() {
        let (rss, peak) = memory_kib(std::process::id()).unwrap();
        assert!(rss > 0 && peak >= rss, "{rss} {peak}");
        assert_eq!(memory_kib(u32::MAX), None);
    }

    #[test]
    fn the_weaver_command_names_its_configuration_and_address_and_drops_weavers_variables() {
        let dir = tempfile::tempdir().unwrap();
        let env = [("OPENAI_API_KEY", "k"), ("WEAVER_DEV_KEY", "chosen")];
        let command = weaver_command(
            Path::new("/bin/weaver"),
            dir.path(),
            Some("listen = \"x\""),
            "127.0.0.1:9",
            &env,
        );
        let config = dir.path().join("weaver.toml");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "listen = \"x\"");
        let args: Vec<&std::ffi::OsStr> = command.get_args().collect();
        assert_eq!(
            args,
            [
                "--config".as_ref(),
                config.as_os_str(),
                "--listen".as_ref(),
                "127.0.0.1:9".as_ref()
            ]
        );
        assert_eq!(command.get_current_dir(), Some(dir.path()));
        let envs: Vec<_> = command.get_envs().collect();
        assert!(envs.contains(&("WEAVER_CONFIG".as_ref(), None)), "{envs:?}");
        // A variable the caller names is set, even one removed from the inherited ones.
        assert!(envs.contains(&("WEAVER_DEV_KEY".as_ref(), Some("chosen".as_ref()))));
        assert!(envs.contains(&("OPENAI_API_KEY".as_ref(), Some("k".as_ref()))));

        let bare = tempfile::tempdir().unwrap();
        let command = weaver_command(Path::new("/bin/weaver"), bare.path(), None, "[::1]:9", &[]);
        assert_eq!(
            command.get_args().collect::<Vec<_>>(),
            ["--listen", "[::1]:9"]
        );
        assert!(!bare.path().join("weaver.toml").exists());
    }

    #[tokio::test]
    async fn a_stalled_request_arrives_whole() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let request = json_post(address, "/ai/chat", "ApiKey k", "{\"message\":\"hi\"}");
        let _client = stalled_request(address, &request).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let mut received = vec![0; request.len()];
        server.read_exact(&mut received).await.unwrap();
        assert_eq!(received, request);
        let text = String::from_utf8(received).unwrap();
        assert!(text.starts_with("POST /ai/chat HTTP/1.1\r\n"), "{text}");
        assert!(text.ends_with("content-length: 16\r\n\r\n{\"message\":\"hi\"}"));
    }
}
