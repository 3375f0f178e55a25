//! A real PostgreSQL server for the `pg` backend tests: Debian's package (installed by
//! `scripts/deps.sh` when missing), a fresh cluster in a temporary folder, listening
//! only on a Unix socket in that folder (no TCP), trust authentication, run as an
//! unprivileged user (the server refuses root: `nobody` when the tests run as root),
//! stopped and removed on drop. Without PostgreSQL a test is skipped with a message,
//! except under `CI=true`, where it fails.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One running server.
pub struct PgServer {
    pub dir: PathBuf,
    bin: PathBuf,
    ids: Option<(u32, u32)>,
}

/// The folder of `initdb`, `pg_ctl` and `postgres`: the newest Debian version, else PATH.
fn bindir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file() && b.join("pg_ctl").is_file())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(b) = found.pop() {
        return Some(b);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let b = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    b.join("initdb").is_file().then_some(b)
}

/// `nobody`'s user and group when this process is root (the server refuses root).
fn unprivileged() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let line = passwd.lines().find(|l| l.starts_with("nobody:"));
    let ids = line.and_then(|l| {
        let f: Vec<&str> = l.split(':').collect();
        Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?))
    });
    Some(ids.unwrap_or((65534, 65534)))
}

impl PgServer {
    /// Starts a server named after `tag`; `None` (skipped) when PostgreSQL is not
    /// installed, a panic under `CI=true`.
    pub fn start(tag: &str) -> Option<PgServer> {
        let Some(bin) = bindir() else {
            super::missing(
                "PostgreSQL (initdb, pg_ctl) is not installed (scripts/deps.sh installs it)",
            );
            return None;
        };
        let dir =
            std::env::temp_dir().join(format!("gpuplan-pgserver-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let ids = unprivileged();
        if let Some((u, g)) = ids {
            std::os::unix::fs::chown(&dir, Some(u), Some(g)).unwrap();
        }
        let s = PgServer { dir, bin, ids };
        let data = s.dir.join("data");
        let init = s
            .cmd("initdb")
            .args(["-A", "trust", "-U", "gpuplan", "-N", "-E", "UTF8", "-D"])
            .arg(&data)
            .output()
            .expect("run initdb");
        assert!(
            init.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&init.stderr)
        );
        s.ctl_start();
        Some(s)
    }

    fn cmd(&self, tool: &str) -> Command {
        let mut c = Command::new(self.bin.join(tool));
        c.current_dir(&self.dir).env_remove("PGDATA");
        if let Some((u, g)) = self.ids {
            c.uid(u).gid(g);
        }
        c
    }

    /// Starts (again) the server: only a Unix socket in [`PgServer::dir`].
    pub fn ctl_start(&self) {
        let opts = format!(
            "-c listen_addresses='' -c unix_socket_directories='{}' -c fsync=off -c max_connections=100",
            self.dir.display()
        );
        let out = self
            .cmd("pg_ctl")
            .args(["-w", "-t", "60", "-l"])
            .arg(self.dir.join("log"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-o", &opts, "start"])
            .output()
            .expect("run pg_ctl start");
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        );
    }

    /// Stops the server (`fast`: open sessions are ended), as a lost server would.
    pub fn ctl_stop(&self) {
        let _ = self
            .cmd("pg_ctl")
            .args(["-w", "-t", "60", "-m", "fast", "-D"])
            .arg(self.dir.join("data"))
            .arg("stop")
            .output();
    }

    /// The environment a client needs: socket folder, user, database.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("PGHOST", self.dir.display().to_string()),
            ("PGUSER", "gpuplan".into()),
            ("PGDATABASE", "postgres".into()),
            ("PGCONNECT_TIMEOUT", "5".into()),
        ]
    }

    /// The folder of the server's socket (`PGHOST`).
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self
            .cmd("pg_ctl")
            .args(["-w", "-t", "30", "-m", "immediate", "-D"])
            .arg(self.dir.join("data"))
            .arg("stop")
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
