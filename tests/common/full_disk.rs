//! A small file system of its own (a tmpfs mounted for the test) that a test fills up and
//! frees again, to meet a full disk (ENOSPC) the way a user does. Mounting needs root; where
//! it is refused, [`SmallDisk::mount`] says so and the test is skipped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A mounted tmpfs of a few megabytes, unmounted on drop.
pub struct SmallDisk {
    root: tempfile::TempDir,
}

impl SmallDisk {
    /// Mounts a tmpfs of `megabytes`; `None` (with a note on stderr) where mounting is not
    /// allowed.
    pub fn mount(megabytes: u32) -> Option<SmallDisk> {
        let root = tempfile::tempdir().expect("temp dir");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(root.path())
            .output();
        match mounted {
            Ok(output) if output.status.success() => Some(SmallDisk { root }),
            other => {
                eprintln!("skipped: cannot mount a tmpfs here ({other:?})");
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// The file that fills the disk.
    fn filler(&self) -> PathBuf {
        self.path().join("filler")
    }

    /// Fills every free byte of the disk with one file.
    pub fn fill(&self) {
        let mut file = std::fs::File::create(self.filler()).expect("create the filler");
        for size in [1 << 16, 1 << 12, 1] {
            let chunk = vec![0u8; size];
            while file.write_all(&chunk).is_ok() {}
        }
        let _ = file.sync_all();
    }

    /// Frees what [`SmallDisk::fill`] took.
    pub fn free(&self) {
        std::fs::remove_file(self.filler()).expect("remove the filler");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.root.path()).status();
    }
}
