//! Session directories: where a node's Unix sockets live, mode 0700.

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Creates a fresh session directory `<root>/session_<pid>_<tag>` with mode 0700.
pub fn create_session_dir(root: &Path, tag: &str) -> io::Result<PathBuf> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(root)?;
    let dir = root.join(format!("session_{}_{tag}", std::process::id()));
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
        if !Path::new(&format!("/proc/{pid}")).exists() {
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

/// Whether `pid` exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !matches!(s.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next()), Some('Z') | None),
        Err(_) => false,
    }
}

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
