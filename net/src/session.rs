//! Session directories: where a node's Unix sockets live, mode 0700.

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Longest Unix socket path Linux accepts (`sun_path` is 108 bytes with the final NUL).
pub(crate) const MAX_SOCKET_PATH: usize = 107;

/// Where worker `worker_hex` (its ID in hex) of the session in `session_dir` listens.
/// The worker binds it; its raylet removes it once the worker has exited.
pub fn worker_socket_path(session_dir: &Path, worker_hex: &str) -> PathBuf {
    session_dir.join(format!("worker-{}.sock", &worker_hex[..worker_hex.len().min(12)]))
}

/// Makes sure `root` can hold this user's sessions safely, creating it (mode 0700) if it
/// does not exist. An existing root must be a directory (not a symbolic link) owned by
/// this user and not writable by group or others: anyone who can write to it could
/// replace the sockets in it. The error names the path and the fix.
pub fn check_session_root(root: &Path) -> io::Result<()> {
    let refuse = |problem: String, fix: String| {
        io::Error::new(io::ErrorKind::PermissionDenied, format!("session root {}: {problem}; {fix}", root.display()))
    };
    let other_root = "pick another root with --session-root or ARES_SESSION_ROOT";
    match std::fs::symlink_metadata(root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = root.parent() {
                std::fs::create_dir_all(parent)?;
            }
            match std::fs::DirBuilder::new().mode(0o700).create(root) {
                Ok(()) => std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))?,
                // Made by someone else meanwhile: check theirs below.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(refuse(format!("cannot be created: {e}"), other_root.into())),
            }
            check_session_root_exists(root, &refuse, other_root)
        }
        Err(e) => Err(refuse(format!("cannot be read: {e}"), other_root.into())),
        Ok(_) => check_session_root_exists(root, &refuse, other_root),
    }
}

fn check_session_root_exists(
    root: &Path,
    refuse: &dyn Fn(String, String) -> io::Error,
    other_root: &str,
) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(root)?;
    if m.file_type().is_symlink() {
        return Err(refuse("is a symbolic link".into(), format!("remove it, or {other_root}")));
    }
    if !m.is_dir() {
        return Err(refuse("is not a directory".into(), format!("remove it, or {other_root}")));
    }
    let me = rustix::process::getuid().as_raw();
    if m.uid() != me {
        return Err(refuse(format!("belongs to uid {}, not to you (uid {me})", m.uid()), other_root.into()));
    }
    if m.mode() & 0o022 != 0 {
        return Err(refuse(
            format!("is writable by group or others (mode {:o})", m.mode() & 0o777),
            format!("run `chmod 700 {}`, or {other_root}", root.display()),
        ));
    }
    Ok(())
}

/// Creates a fresh session directory `<root>/session_<pid>_<tag>` with mode 0700, after
/// checking the root (see [`check_session_root`]).
pub fn create_session_dir(root: &Path, tag: &str) -> io::Result<PathBuf> {
    check_session_root(root)?;
    let dir = root.join(format!("session_{}_{tag}", std::process::id()));
    // Sockets live in the session directory, and a Unix socket path holds at most
    // `MAX_SOCKET_PATH` bytes: refuse a root too long for them now, rather than have
    // every worker fail to bind later.
    let longest = worker_socket_path(&dir, "000000000000");
    if longest.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "session root {} is too long: sockets under it, such as {}, would be {} bytes and a Unix socket path \
                 holds at most {MAX_SOCKET_PATH}; choose a root of at most {} bytes (--session-root, ARES_SESSION_ROOT)",
                root.display(),
                longest.display(),
                longest.as_os_str().len(),
                root.as_os_str().len().saturating_sub(longest.as_os_str().len() - MAX_SOCKET_PATH),
            ),
        ));
    }
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    // The mode above is filtered by the umask; make it exact.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// Removes session directories under `root` whose creating process no longer exists
/// (left behind by a driver that was killed with SIGKILL).
pub fn remove_stale_session_dirs(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("session_")) else {
            continue;
        };
        let Some(pid) = rest.split('_').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        // A killed daemon not reaped yet (a zombie) is dead too.
        if !crate::process_alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// What a node daemon (`ares start`) records about itself in its session directory, in
/// `node.info` (`key=value` lines), so that tools and drivers on the same machine can find
/// it: `ares status`, `ares stop` and `ARES_ADDRESS=auto` or `HOST:PORT`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DaemonInfo {
    /// Its session directory.
    pub dir: PathBuf,
    /// Its process ID.
    pub pid: u32,
    /// `head` or `member`.
    pub role: String,
    /// Its node ID, as printed.
    pub node: String,
    /// The cluster's address (the head's HOST:PORT).
    pub cluster: Option<String>,
    /// The Unix socket drivers on this machine connect to.
    pub socket: Option<String>,
    /// Its spill directories.
    pub spill: Vec<PathBuf>,
    /// Whether its process still runs.
    pub alive: bool,
}

impl DaemonInfo {
    /// Writes `node.info` into `self.dir`.
    pub fn write(&self) -> io::Result<()> {
        let mut text = format!("pid={}\nrole={}\nnode={}\n", self.pid, self.role, self.node);
        if let Some(c) = &self.cluster {
            text.push_str(&format!("cluster={c}\n"));
        }
        if let Some(s) = &self.socket {
            text.push_str(&format!("socket={s}\n"));
        }
        for d in &self.spill {
            text.push_str(&format!("spill={}\n", d.display()));
        }
        std::fs::write(self.dir.join("node.info"), text)
    }

    fn read(dir: &Path) -> Option<DaemonInfo> {
        let text = std::fs::read_to_string(dir.join("node.info")).ok()?;
        let field = |k: &str| text.lines().find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix('=')));
        let pid: u32 = field("pid")?.parse().ok()?;
        Some(DaemonInfo {
            dir: dir.to_path_buf(),
            pid,
            role: field("role").unwrap_or_default().to_string(),
            node: field("node").unwrap_or_default().to_string(),
            cluster: field("cluster").map(str::to_string),
            socket: field("socket").map(str::to_string),
            spill: text.lines().filter_map(|l| l.strip_prefix("spill=")).map(PathBuf::from).collect(),
            alive: process_alive(pid),
        })
    }
}

/// Every daemon that left a `node.info` under `root`, dead ones included, by pid.
pub fn daemons(root: &Path) -> Vec<DaemonInfo> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut out: Vec<DaemonInfo> = entries.flatten().filter_map(|e| DaemonInfo::read(&e.path())).collect();
    out.sort_by_key(|d| d.pid);
    out
}

pub use ares_common::process_alive;

/// The local socket a driver on this machine uses for `address`:
/// - a path is a daemon's socket, used as is;
/// - `auto` is the daemon running under `root` (the head, if several run);
/// - `HOST:PORT` is the cluster whose head is there: the driver goes through this
///   machine's daemon of that cluster, as a Ray driver goes through its local raylet.
pub fn resolve_driver_address(address: &str, root: &Path) -> io::Result<String> {
    if address.contains('/') {
        return Ok(address.to_string());
    }
    let running: Vec<DaemonInfo> = daemons(root).into_iter().filter(|d| d.alive && d.socket.is_some()).collect();
    let not_found = |what: String| io::Error::new(io::ErrorKind::NotFound, what);
    let pick = if address == "auto" {
        running.iter().find(|d| d.role == "head").or(running.first()).ok_or_else(|| {
            not_found(format!(
                "ARES_ADDRESS=auto: no ares node daemon runs on this machine (under {}); start one with `ares start --head`",
                root.display()
            ))
        })?
    } else {
        use std::net::ToSocketAddrs;
        let want: Vec<std::net::SocketAddr> = address
            .to_socket_addrs()
            .map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("address {address:?}: expected `auto`, HOST:PORT or a socket path ({e})"),
                )
            })?
            .collect();
        let same = |c: &str| c.parse::<std::net::SocketAddr>().is_ok_and(|a| want.contains(&a)) || c == address;
        running.iter().find(|d| d.cluster.as_deref().is_some_and(same)).ok_or_else(|| {
            not_found(format!(
                "no node daemon of the cluster at {address} runs on this machine (under {}); join one first with \
                 `ares start --address {address} --token <token>`",
                root.display()
            ))
        })?
    };
    Ok(pick.socket.clone().expect("filtered on a socket"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ares-root-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let _ = std::fs::remove_file(&d);
        d
    }

    #[test]
    fn a_root_too_long_for_socket_paths_is_refused_naming_the_limit() {
        let base = scratch("long");
        let long = base.join("x".repeat(90));
        let e = create_session_dir(&long, "0123456789ab").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let msg = e.to_string();
        assert!(msg.contains("is too long") && msg.contains("--session-root"), "{msg}");
        assert!(std::fs::read_dir(&long).unwrap().next().is_none(), "no session directory was made");
        let dir = create_session_dir(&base, "0123456789ab").unwrap();
        assert!(worker_socket_path(&dir, "0123456789ab").as_os_str().len() <= MAX_SOCKET_PATH);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_new_root_is_private_and_unsafe_roots_are_refused_with_the_fix() {
        use std::os::unix::fs::MetadataExt;
        let fresh = scratch("fresh");
        check_session_root(&fresh).unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o777, 0o700);
        let dir = create_session_dir(&fresh, "t").unwrap();
        assert!(dir.starts_with(&fresh));

        let open = scratch("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = create_session_dir(&open, "t").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("chmod 700") && e.to_string().contains(open.to_str().unwrap()), "{e}");

        let link = scratch("link");
        std::os::unix::fs::symlink(&fresh, &link).unwrap();
        let e = check_session_root(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");

        let file = scratch("file");
        std::fs::write(&file, b"x").unwrap();
        assert!(check_session_root(&file).unwrap_err().to_string().contains("not a directory"));

        // Another user's root (only root can make one here).
        if rustix::process::getuid().is_root() {
            let theirs = scratch("theirs");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = check_session_root(&theirs).unwrap_err();
            assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
            let _ = std::fs::remove_dir_all(&theirs);
        }
        for p in [&fresh, &open] {
            let _ = std::fs::remove_dir_all(p);
        }
        let _ = std::fs::remove_file(&link);
        let _ = std::fs::remove_file(&file);
    }
}
