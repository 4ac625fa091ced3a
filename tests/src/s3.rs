//! A real S3 server on loopback for the tests: SeaweedFS (`weed mini`,
//! installed by `scripts/test.sh` into the target folder's `py`), on free ports in a
//! throwaway folder, with one identity and one bucket; it stops with the
//! value.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::target_dir;

pub const KEY: &str = "platform-test-key";
pub const SECRET: &str = "platform-test-secret";
pub const BUCKET: &str = "platform-files";

/// A running S3 server.
pub struct S3 {
    child: Child,
    pub endpoint: String,
    _dir: tempfile::TempDir,
}

/// The `weed` binary: `WEED_BIN`, else the one `scripts/test.sh` put in
/// the target folder's `py`, else one on the `PATH`.
fn weed() -> PathBuf {
    if let Ok(bin) = std::env::var("WEED_BIN") {
        return bin.into();
    }
    let local = target_dir().join("py").join("bin").join("weed");
    if local.exists() {
        return local;
    }
    "weed".into()
}

/// A port that is free, with its gRPC twin (port + 10000) free too.
fn free_port_pair(taken: &mut Vec<u16>) -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        if port > 55_000 || taken.contains(&port) || taken.contains(&(port + 10_000)) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            taken.push(port);
            taken.push(port + 10_000);
            return port;
        }
    }
}

impl S3 {
    /// Starts the server and waits until its bucket answers.
    pub fn start() -> S3 {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("s3.json");
        std::fs::write(
            &config,
            format!(
                r#"{{"identities":[{{"name":"tests","credentials":[{{"accessKey":"{KEY}","secretKey":"{SECRET}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
            ),
        )
        .expect("s3 config");
        let mut taken = Vec::new();
        let mut port = || free_port_pair(&mut taken);
        let (master, volume, filer, s3, admin, lance) =
            (port(), port(), port(), port(), port(), port());
        let log = std::fs::File::create(dir.path().join("weed.log")).expect("log");
        let child = Command::new(weed())
            .arg("mini")
            .arg(format!("-dir={}", dir.path().join("data").display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-master.port={master}"))
            .arg(format!("-volume.port={volume}"))
            .arg(format!("-filer.port={filer}"))
            .arg(format!("-s3.port={s3}"))
            .arg(format!("-admin.port={admin}"))
            .arg(format!("-s3.port.lance={lance}"))
            // Its Iceberg catalog would take the fixed port 8181, which a
            // server of another test process running at once holds.
            .arg("-s3.port.iceberg=0")
            .args(["-admin.ui=false", "-webdav=false"])
            .arg(format!("-s3.config={}", config.display()))
            .arg(format!("-bucket={BUCKET}"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start SeaweedFS ({}): {e}; scripts/test.sh installs it",
                    weed().display()
                )
            });
        let server = S3 {
            child,
            endpoint: format!("http://127.0.0.1:{s3}"),
            _dir: dir,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(2))
            .build();
        let log = self._dir.path().join("weed.log");
        loop {
            // The bucket exists once an anonymous request for it is
            // refused rather than not found.
            let answer = agent.get(&format!("{}/{BUCKET}", self.endpoint)).call();
            let status = match answer {
                Ok(r) => Some(r.status()),
                Err(ureq::Error::Status(code, _)) => Some(code),
                Err(_) => None,
            };
            if matches!(status, Some(200) | Some(403)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "SeaweedFS did not serve bucket {BUCKET} within 60 s (last status {status:?}): {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The environment of a host whose only location, `s3`, is this
    /// server's bucket.
    pub fn host_env(&self) -> Vec<(String, String)> {
        [
            ("STORAGE_LOCATIONS", "s3"),
            ("STORAGE_S3_DRIVER", "s3"),
            ("STORAGE_S3_KEY", KEY),
            ("STORAGE_S3_SECRET", SECRET),
            ("STORAGE_S3_BUCKET", BUCKET),
            ("STORAGE_S3_REGION", "us-east-1"),
            ("STORAGE_S3_ENDPOINT", &self.endpoint),
            ("STORAGE_S3_FORCE_PATH_STYLE", "true"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
