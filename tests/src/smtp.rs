//! A real SMTP server on loopback for the tests: Python's `aiosmtpd`, with
//! the handler of `tests/smtp/mail_sink.py`, which writes each message it
//! receives to a folder as JSON; [`MailServer`] reads them back.
//!
//! `aiosmtpd` comes from PyPI into a virtual environment under the target
//! folder (`target/py`): `scripts/test.sh` makes it, and so does
//! [`python`] when a test runs on its own without it.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{target_dir, workspace_root};

/// The Python interpreter of `target/py`, with `aiosmtpd` installed (made
/// once, if missing). Panics with what to do when Python cannot make it.
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let venv = target_dir().join("py");
            let python = venv.join("bin").join("python");
            let has_aiosmtpd = |python: &Path| {
                Command::new(python)
                    .args(["-c", "import aiosmtpd"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if has_aiosmtpd(&python) {
                return python;
            }
            let run = |cmd: &mut Command, what: &str| {
                let out = cmd.output().unwrap_or_else(|e| {
                    panic!("{what} could not run ({e}): the mail tests need Python 3 with venv")
                });
                assert!(
                    out.status.success(),
                    "{what} failed:\n{}",
                    crate::printed(&out)
                );
            };
            if !python.exists() {
                run(
                    Command::new("python3").arg("-m").arg("venv").arg(&venv),
                    "python3 -m venv",
                );
            }
            run(
                Command::new(&python).args(["-m", "pip", "install", "--quiet", "aiosmtpd"]),
                "pip install aiosmtpd",
            );
            assert!(has_aiosmtpd(&python), "aiosmtpd did not install");
            python
        })
        .clone()
}

/// One message the server received.
#[derive(Debug, Clone)]
pub struct Mail {
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    /// The plain text, decoded.
    pub text: String,
}

impl Mail {
    /// The first link of the text (a word starting with `http://`,
    /// `https://` or `/`).
    pub fn link(&self) -> Option<String> {
        self.text
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://") || w.starts_with('/'))
            .map(String::from)
    }

    /// The `token` of the link's query.
    pub fn token(&self) -> Option<String> {
        let link = self.link()?;
        let query = link.split_once('?')?.1;
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == "token")
            .map(|(_, v)| v.to_string())
    }
}

/// An `aiosmtpd` server on a free loopback port; stopped when dropped.
pub struct MailServer {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl MailServer {
    pub fn start() -> Self {
        let python = python();
        let dir = tempfile::tempdir().expect("mail folder");
        let folder = dir.path().join("mail");
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("aiosmtpd.log")).expect("log file");
        let child = Command::new(python)
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["-c", "mail_sink.Sink"])
            .arg(&folder)
            .env("PYTHONPATH", workspace_root().join("tests").join("smtp"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start aiosmtpd");
        let mut server = Self { child, port, dir };
        server.wait_listening();
        server
    }

    fn wait_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("aiosmtpd exited ({status}):\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("aiosmtpd did not listen on {}:\n{}", self.port, self.log());
    }

    /// What the server wrote to its standard error.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("aiosmtpd.log")).unwrap_or_default()
    }

    /// The folder the messages are written to, one JSON file each.
    pub fn folder(&self) -> PathBuf {
        self.dir.path().join("mail")
    }

    /// The environment of a host that mails through this server.
    pub fn host_env(&self) -> Vec<(String, String)> {
        [
            ("EMAIL_TRANSPORT", "smtp".to_string()),
            ("EMAIL_SMTP_HOST", "127.0.0.1".to_string()),
            ("EMAIL_SMTP_PORT", self.port.to_string()),
            ("EMAIL_FROM", "site@platform.test".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Every message received so far, in order.
    pub fn messages(&self) -> Vec<Mail> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.folder())
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
            .iter()
            .map(|path| {
                let text = std::fs::read_to_string(path).expect("read a mail");
                let v: Value = serde_json::from_str(&text).expect("a mail as JSON");
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                Mail {
                    from: s("from"),
                    to: v["to"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(String::from)
                                .collect()
                        })
                        .unwrap_or_default(),
                    subject: s("subject"),
                    text: s("text"),
                }
            })
            .collect()
    }

    /// The messages received for `to`.
    pub fn messages_to(&self, to: &str) -> Vec<Mail> {
        self.messages()
            .into_iter()
            .filter(|m| m.to.iter().any(|t| t.eq_ignore_ascii_case(to)))
            .collect()
    }

    /// Waits (up to 20 s) until `to` has received `count` messages; the
    /// last of them.
    pub fn wait_for(&self, to: &str, count: usize) -> Mail {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mails = self.messages_to(to);
            if mails.len() >= count {
                return mails[count - 1].clone();
            }
            assert!(
                Instant::now() < deadline,
                "{to} received {} message(s), not {count}; the server's log:\n{}",
                mails.len(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for MailServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
