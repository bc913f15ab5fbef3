//! The real `reftrack` binary as a child process: started with a given environment,
//! its output captured, stopped with a signal.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Path of the binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_reftrack");

/// A running server.
pub struct Server {
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Everything printed on stdout and stderr so far.
    pub output: Arc<Mutex<String>>,
    /// The threads copying stdout and stderr into `output`; they end when the process
    /// has exited and they have read all it printed.
    readers: Vec<std::thread::JoinHandle<()>>,
}

/// A SQLite database in `dir`, migrated by the binary, for the command-line tests: its URL.
pub fn migrated_cli_db(dir: &std::path::Path) -> String {
    let db = format!("sqlite://{}", dir.join("cli.db").display());
    let migrated = command(&[("REFTRACK_DATABASE_URL", db.as_str())])
        .arg("migrate")
        .status()
        .unwrap();
    assert!(migrated.success());
    db
}

/// `reftrack ARGS` on the database `db`: whether it succeeded, and what it printed (its
/// output on success, else its error) as JSON, `{"text": …}` when that is not JSON.
pub fn cli(db: &str, args: &[&str]) -> (bool, serde_json::Value) {
    let (ok, text) = outcome(command(&[("REFTRACK_DATABASE_URL", db)]).args(args));
    let out = serde_json::from_str(&text).unwrap_or(serde_json::json!({ "text": text }));
    (ok, out)
}

/// A command for the binary with no `REFTRACK_*` variable but those given.
pub fn command(env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    for (k, _) in std::env::vars() {
        if k.starts_with("REFTRACK_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `cmd` to its end: whether it succeeded, and what it printed (its output, or its
/// error output when it failed).
pub fn outcome(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap();
    let text = if out.status.success() {
        out.stdout
    } else {
        out.stderr
    };
    (out.status.success(), String::from_utf8(text).unwrap())
}

/// A TCP port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn capture(
    stream: impl Read + Send + 'static,
    into: Arc<Mutex<String>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let mut out = into.lock().unwrap();
            out.push_str(&line);
            out.push('\n');
        }
    })
}

impl Server {
    /// Starts the binary on the database at `url`, on a free local port, with the admin
    /// token `admin` and the settings `more`, and waits until it serves.
    pub fn on(url: &str, admin: &str, more: &[(&str, &str)]) -> Server {
        let listen = format!("127.0.0.1:{}", free_port());
        let mut env = vec![
            ("REFTRACK_DATABASE_URL", url),
            ("REFTRACK_LISTEN", listen.as_str()),
            ("REFTRACK_ADMIN_TOKEN", admin),
        ];
        env.extend_from_slice(more);
        Server::start(&env)
    }

    /// The address it listens on (`127.0.0.1:port`).
    pub fn listen(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// Starts the binary with `env` and waits until it serves.
    pub fn start(env: &[(&str, &str)]) -> Server {
        let mut child = command(env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let mut readers = vec![capture(child.stderr.take().unwrap(), output.clone())];
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let base = loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = child.wait();
                panic!(
                    "server exited before serving: {}",
                    output.lock().unwrap().as_str()
                );
            }
            output.lock().unwrap().push_str(&line);
            if let Some(addr) = line.strip_prefix("Reftrack is serving on ") {
                break addr.trim().to_string();
            }
        };
        readers.push(capture(stdout, output.clone()));
        Server {
            child,
            base,
            output,
            readers,
        }
    }

    /// Sends a signal (`TERM`, `INT`, `KILL`) to the process.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits up to `limit` for the process to exit; once it has, [`Server::output`]
    /// holds everything it printed.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                for reader in self.readers.drain(..) {
                    let _ = reader.join();
                }
                return Some(s);
            }
            if started.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the process printed so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
