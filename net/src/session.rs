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
