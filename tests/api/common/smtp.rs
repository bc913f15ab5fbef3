//! A fake SMTP server on a port-0 listener: speaks enough SMTP (EHLO, MAIL, RCPT, DATA,
//! QUIT) to take a message, and hands each message it took to the test.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A message as the server took it.
#[derive(Debug, Default, Clone)]
pub struct Received {
    /// The envelope's sender (`MAIL FROM`).
    pub from: String,
    /// The envelope's recipients (`RCPT TO`).
    pub to: Vec<String>,
    /// The message itself, headers and body, dot-stuffing undone.
    pub data: String,
}

/// A running fake server; it stops when dropped.
pub struct FakeSmtp {
    /// `smtp://127.0.0.1:PORT`.
    pub url: String,
    received: mpsc::UnboundedReceiver<Received>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeSmtp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeSmtp {
    /// Starts a server that accepts every message.
    pub async fn start() -> FakeSmtp {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("smtp://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let (tx, received) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let _ = session(socket, tx).await;
                });
            }
        });
        FakeSmtp {
            url,
            received,
            task,
        }
    }

    /// The next message the server takes, waiting up to 10 s for it.
    pub async fn next(&mut self) -> Received {
        tokio::time::timeout(Duration::from_secs(10), self.received.recv())
            .await
            .expect("a mail within 10 s")
            .expect("the fake SMTP server runs")
    }

    /// Whether a message was taken and not yet read.
    pub fn has_more(&mut self) -> bool {
        !self.received.is_empty()
    }
}

/// The address inside `<…>` of a `MAIL FROM:`/`RCPT TO:` argument.
fn address(arg: &str) -> String {
    let arg = arg.trim();
    let inner = arg
        .strip_prefix('<')
        .and_then(|a| a.split_once('>'))
        .map_or(arg, |(a, _)| a);
    inner.to_string()
}

async fn session(socket: TcpStream, tx: mpsc::UnboundedSender<Received>) -> std::io::Result<()> {
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"220 fake.test ESMTP\r\n").await?;
    let mut mail = Received::default();
    while let Some(line) = lines.next_line().await? {
        let command = line.to_ascii_uppercase();
        let reply: &[u8] = if command.starts_with("EHLO") || command.starts_with("HELO") {
            b"250 fake.test\r\n"
        } else if let Some(arg) = command.strip_prefix("MAIL FROM:") {
            mail.from = address(&line[line.len() - arg.len()..]);
            b"250 OK\r\n"
        } else if let Some(arg) = command.strip_prefix("RCPT TO:") {
            mail.to.push(address(&line[line.len() - arg.len()..]));
            b"250 OK\r\n"
        } else if command == "DATA" {
            write
                .write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                .await?;
            while let Some(data) = lines.next_line().await? {
                if data == "." {
                    break;
                }
                mail.data.push_str(data.strip_prefix('.').unwrap_or(&data));
                mail.data.push_str("\r\n");
            }
            let _ = tx.send(std::mem::take(&mut mail));
            b"250 OK: queued\r\n"
        } else if command == "QUIT" {
            write.write_all(b"221 Bye\r\n").await?;
            return Ok(());
        } else if command == "RSET" || command == "NOOP" {
            b"250 OK\r\n"
        } else {
            b"502 Command not implemented\r\n"
        };
        write.write_all(reply).await?;
    }
    Ok(())
}
