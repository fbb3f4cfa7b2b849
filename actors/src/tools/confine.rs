//! Where the file tools may go: inside the workspace and the write roots
//! ([`ToolContext::roots`]), unless the call was granted more
//! (`Grant::outside_roots`).
//!
//! The check is made on what was actually opened, never on a path string
//! alone: a path is first opened (following symlinks, without reading it:
//! `O_PATH` on Linux), then the real location of that open descriptor is
//! compared with the canonicalised roots, and everything after that works on
//! the same file through the descriptor (reopened through
//! `/proc/self/fd/N`, which names that inode whatever happens to the path).
//! A new file is created with `openat(O_CREAT | O_EXCL | O_NOFOLLOW)`
//! relative to a directory descriptor that was checked the same way, and
//! missing directories with `mkdirat` plus `openat(O_NOFOLLOW)`. So a
//! symlink inside the workspace that leads outside is refused, and swapping
//! a path component for a symlink between the check and the use changes
//! nothing.
//!
//! It must never let a refused call touch the file (not even open it for
//! reading or writing), and never refuse what lies inside the roots. Where
//! `/proc` is missing (or not on Linux), the real path comes from
//! `canonicalize` and is accepted only when it names the same inode as the
//! open descriptor; a reopen by that path is likewise checked by inode
//! before anything is written.
//!
//! What it does not cover: a directory walk (glob, grep) lists names below
//! a checked root by path, so a directory swapped for a symlink in the
//! middle of a walk can show names from elsewhere; grep still checks every
//! file it reads.

use super::context::ToolContext;
use super::error::ToolError;
use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, mkdirat};
use std::fs::{File, Metadata, OpenOptions};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a call may reach: the roots as configured (for messages) and as
/// they really are (for the checks), or everything when granted.
#[derive(Clone, Debug)]
pub(crate) struct Confinement {
    workspace: PathBuf,
    /// Every root, lexically (the workspace first).
    roots: Vec<PathBuf>,
    /// Every root that exists, canonicalised.
    real_roots: Vec<PathBuf>,
    granted: bool,
}

/// What is at a checked path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Directory,
    RegularFile,
    /// A device, FIFO or socket.
    Special,
}

/// A path opened without reading it, whose real location was checked.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The path as the tool named it (for messages).
    pub path: PathBuf,
    /// Where it really is.
    pub real: PathBuf,
    pub kind: Kind,
    meta: Metadata,
    fd: OwnedFd,
}

impl Confinement {
    /// The confinement of a call with this context.
    pub fn of(ctx: &ToolContext) -> Confinement {
        let roots = ctx.roots();
        let real_roots = roots
            .iter()
            .filter_map(|root| std::fs::canonicalize(root).ok())
            .collect();
        Confinement {
            workspace: ctx.workspace.clone(),
            roots,
            real_roots,
            granted: ctx.grant.outside_roots,
        }
    }

    /// Refuses `path` (absolute, lexically normalised) when it is not even
    /// named inside the roots; touches nothing. What it leads to is checked
    /// when it is opened.
    pub fn check_named(&self, path: &Path, verb: &str) -> Result<(), ToolError> {
        if self.granted
            || self.roots.iter().any(|root| path.starts_with(root))
            || self.real_roots.iter().any(|root| path.starts_with(root))
        {
            return Ok(());
        }
        Err(self.refusal(path, None, verb))
    }

    /// Whether a real (canonical) path lies inside the roots.
    fn allows_real(&self, real: &Path) -> bool {
        self.granted || self.real_roots.iter().any(|root| real.starts_with(root))
    }

    /// Opens `path` (following symlinks) without reading or writing it and
    /// checks where it really is. `Ok(None)`: nothing is there.
    pub fn open(&self, path: &Path, verb: &str) -> Result<Option<Opened>, ToolError> {
        self.check_named(path, verb)?;
        let Some(opened) = locate(path).map_err(|e| ToolError::io(io_action(verb), path, e))?
        else {
            return Ok(None);
        };
        if !self.allows(&opened) {
            return Err(self.refusal(path, Some(&opened.real), verb));
        }
        Ok(Some(opened))
    }

    /// Whether what was located lies inside the roots (or the call was
    /// granted more).
    pub fn allows(&self, opened: &Opened) -> bool {
        self.allows_real(&opened.real)
    }

    /// Creates the new file `path` for writing, with any missing parent
    /// directories, beneath a directory whose real location was checked;
    /// never through a symlink. Fails if something is already there.
    pub fn create_new(&self, path: &Path, verb: &str) -> Result<File, ToolError> {
        let (mut dir_fd, missing, name) = self.checked_ancestor(path, verb)?;
        for name in missing.iter().rev() {
            match mkdirat(&dir_fd, name.as_os_str(), Mode::from_bits_truncate(0o777)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => {
                    return Err(ToolError::io(
                        "create the parent directory of",
                        path,
                        e.into(),
                    ));
                }
            }
            dir_fd = openat(
                &dir_fd,
                name.as_os_str(),
                OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| ToolError::io("create the parent directory of", path, e.into()))?;
        }
        let fd = openat(
            &dir_fd,
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o666),
        )
        .map_err(|e| match e {
            Errno::EEXIST => ToolError::failed(format!(
                "could not create {}: something appeared there (a symbolic link to a missing \
                 file?); file tools do not create files through symbolic links",
                path.display()
            )),
            e => ToolError::io("create", path, e.into()),
        })?;
        Ok(File::from(fd))
    }

    /// Checks that the new file `path` may be created where its nearest
    /// existing ancestor really is, creating nothing (for a front end that
    /// creates it: `tools/files.rs`).
    pub fn check_new(&self, path: &Path, verb: &str) -> Result<(), ToolError> {
        self.checked_ancestor(path, verb).map(drop)
    }

    /// The nearest existing ancestor of the new file `path`, opened and
    /// checked against the roots; the directory names missing below it
    /// (deepest first) and the file's name.
    fn checked_ancestor<'p>(
        &self,
        path: &'p Path,
        verb: &str,
    ) -> Result<(OwnedFd, Vec<std::ffi::OsString>, &'p std::ffi::OsStr), ToolError> {
        self.check_named(path, verb)?;
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(ToolError::failed(format!(
                "{} is not a file path",
                path.display()
            )));
        };
        // The nearest existing ancestor, and the names to create below it.
        let mut missing = Vec::new();
        let mut dir = parent;
        let dir_fd = loop {
            match open_dir(dir) {
                Ok(fd) => break fd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match (dir.file_name(), dir.parent()) {
                        (Some(last), Some(up)) => {
                            missing.push(last.to_os_string());
                            dir = up;
                        }
                        _ => return Err(ToolError::io("create the parent directory of", path, e)),
                    }
                }
                Err(e) => return Err(ToolError::io("create the parent directory of", path, e)),
            }
        };
        let meta = File::from(
            dir_fd
                .try_clone()
                .map_err(|e| ToolError::io("inspect", dir, e))?,
        )
        .metadata()
        .map_err(|e| ToolError::io("inspect", dir, e))?;
        let real = real_path(&dir_fd, dir, &meta).map_err(|e| ToolError::io("locate", dir, e))?;
        if !self.allows_real(&real) {
            return Err(self.refusal(path, Some(&real.join(path_rest(path, dir))), verb));
        }
        Ok((dir_fd, missing, name))
    }

    /// Why `path` (really `real`, when a symlink led there) may not be
    /// reached: the error the model reads.
    pub fn refusal(&self, path: &Path, real: Option<&Path>, verb: &str) -> ToolError {
        let write_roots: Vec<String> = self
            .roots
            .iter()
            .skip(1)
            .map(|root| root.display().to_string())
            .collect();
        let roots = if write_roots.is_empty() {
            "the write roots (there are none)".to_string()
        } else {
            format!("the write roots ({})", write_roots.join(", "))
        };
        let what = match real {
            Some(real) if real != path => format!("it leads to {}, which is", real.display()),
            _ => "it is".to_string(),
        };
        ToolError::failed(format!(
            "refusing to {verb} {}: {what} outside the workspace {} and {roots}; file tools only \
             work there (more directories can be added as `write_roots` in the `[sandbox]` \
             settings)",
            path.display(),
            self.workspace.display()
        ))
    }
}

impl Opened {
    /// The opened file, opened again for reading (the same inode, not
    /// whatever the path names now).
    pub fn read(&self) -> Result<File, ToolError> {
        self.reopen(OpenOptions::new().read(true), "read")
    }

    /// The opened file, opened again for writing and emptied.
    pub fn overwrite(&self) -> Result<File, ToolError> {
        let file = self.reopen(OpenOptions::new().write(true), "write")?;
        file.set_len(0)
            .map_err(|e| ToolError::io("write", &self.path, e))?;
        Ok(file)
    }

    /// A path naming the opened directory or file itself, for APIs that
    /// take a path (listing a directory): `/proc/self/fd/N` on Linux while
    /// this lives, else the real path.
    pub fn access_path(&self) -> PathBuf {
        let proc = fd_link(&self.fd);
        if cfg!(target_os = "linux") && proc.exists() {
            proc
        } else {
            self.real.clone()
        }
    }

    fn reopen(&self, options: &mut OpenOptions, verb: &'static str) -> Result<File, ToolError> {
        // Never block on a FIFO or take a terminal; regular files ignore it.
        options.custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY);
        let opened = if cfg!(target_os = "linux") {
            match options.open(fd_link(&self.fd)) {
                Ok(file) => Ok(file),
                // No /proc: by the real path, checked below.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.reopen_by_path(options),
                Err(e) => Err(e),
            }
        } else {
            self.reopen_by_path(options)
        };
        let file = opened.map_err(|e| ToolError::io(verb, &self.path, e))?;
        let meta = file
            .metadata()
            .map_err(|e| ToolError::io(verb, &self.path, e))?;
        if !same_file(&meta, &self.meta) {
            return Err(ToolError::failed(format!(
                "{} changed while it was being opened; try again",
                self.path.display()
            )));
        }
        // Back to blocking reads and writes.
        let flags = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETFL)
            .map_err(|e| ToolError::io(verb, &self.path, e.into()))?;
        let flags = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
        nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(flags))
            .map_err(|e| ToolError::io(verb, &self.path, e.into()))?;
        Ok(file)
    }

    fn reopen_by_path(&self, options: &mut OpenOptions) -> std::io::Result<File> {
        options
            .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY | nix::libc::O_NOFOLLOW)
            .open(&self.real)
    }
}

/// Opens `path` (following symlinks) without reading or writing it and
/// finds where it really is, deciding nothing. `Ok(None)`: nothing is
/// there.
pub(crate) fn locate(path: &Path) -> std::io::Result<Option<Opened>> {
    let fd = match open_path(path) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let file = File::from(fd);
    let meta = file.metadata()?;
    let fd = OwnedFd::from(file);
    let real = real_path(&fd, path, &meta)?;
    let kind = if meta.is_dir() {
        Kind::Directory
    } else if meta.is_file() {
        Kind::RegularFile
    } else {
        Kind::Special
    };
    Ok(Some(Opened {
        path: path.to_path_buf(),
        real,
        kind,
        meta,
        fd,
    }))
}

/// What `verb` is called in an I/O error.
fn io_action(verb: &str) -> &'static str {
    match verb {
        "read" => "read",
        "write" => "write",
        "edit" => "edit",
        "list" => "list",
        _ => "open",
    }
}

/// `path` relative to its ancestor `dir`.
fn path_rest<'a>(path: &'a Path, dir: &Path) -> &'a Path {
    path.strip_prefix(dir).unwrap_or(path)
}

/// Opens `path` to locate it, never to read or write it: `O_PATH` on Linux
/// (a FIFO or device is not opened at all), elsewhere read-only and
/// non-blocking.
fn open_path(path: &Path) -> std::io::Result<OwnedFd> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    options.custom_flags(nix::libc::O_PATH | nix::libc::O_CLOEXEC);
    #[cfg(not(target_os = "linux"))]
    options.custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY | nix::libc::O_CLOEXEC);
    options.open(path).map(OwnedFd::from)
}

/// Opens the directory `path` (following symlinks).
fn open_dir(path: &Path) -> std::io::Result<OwnedFd> {
    OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_DIRECTORY | nix::libc::O_CLOEXEC)
        .open(path)
        .map(OwnedFd::from)
}

/// `/proc/self/fd/N` for `fd`.
fn fd_link(fd: &impl AsFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()))
}

/// Where the open `fd` (opened as `path`, with metadata `meta`) really is:
/// what `/proc/self/fd/N` links to, or else `path` canonicalised, accepted
/// only if it names the same inode.
fn real_path(fd: &OwnedFd, path: &Path, meta: &Metadata) -> std::io::Result<PathBuf> {
    // A deleted file reads as "/x (deleted)": no path, no access.
    if cfg!(target_os = "linux")
        && let Ok(real) = std::fs::read_link(fd_link(fd))
        && real.is_absolute()
        && std::fs::symlink_metadata(&real).is_ok()
    {
        return Ok(real);
    }
    let real = std::fs::canonicalize(path)?;
    let now = std::fs::metadata(&real)?;
    if same_file(&now, meta) {
        Ok(real)
    } else {
        Err(std::io::Error::other(
            "it changed while it was being opened",
        ))
    }
}

fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf, ToolContext) {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let ctx = ToolContext::new(&ws);
        (outer, ws, ctx)
    }

    #[test]
    fn opening_inside_the_workspace_works_and_names_the_real_path() {
        let (_outer, ws, ctx) = setup();
        std::fs::write(ws.join("a.txt"), "x").unwrap();
        let conf = Confinement::of(&ctx);
        let opened = conf.open(&ws.join("a.txt"), "read").unwrap().unwrap();
        assert_eq!(opened.kind, Kind::RegularFile);
        assert_eq!(opened.real, ws.join("a.txt").canonicalize().unwrap());
        assert!(conf.open(&ws.join("missing"), "read").unwrap().is_none());
    }

    #[test]
    fn a_symlink_leading_outside_is_refused_with_where_it_leads() {
        let (outer, ws, ctx) = setup();
        std::fs::write(outer.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret"), ws.join("link")).unwrap();
        let conf = Confinement::of(&ctx);
        let err = conf.open(&ws.join("link"), "read").unwrap_err().to_string();
        assert!(err.contains("refusing to read"), "{err}");
        assert!(err.contains("it leads to"), "{err}");
        assert!(err.contains("outside the workspace"), "{err}");
    }

    #[test]
    fn new_files_are_not_created_beneath_a_symlinked_directory_leading_outside() {
        let (outer, ws, ctx) = setup();
        std::os::unix::fs::symlink(outer.path(), ws.join("out")).unwrap();
        let conf = Confinement::of(&ctx);
        let err = conf
            .create_new(&ws.join("out/new/file.txt"), "write")
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing to write"), "{err}");
        assert!(!outer.path().join("new").exists());
        let file = conf.create_new(&ws.join("in/new/file.txt"), "write");
        assert!(file.is_ok(), "{file:?}");
        assert!(ws.join("in/new/file.txt").is_file());
    }

    #[test]
    fn a_grant_lets_everything_through() {
        let (outer, _ws, mut ctx) = setup();
        std::fs::write(outer.path().join("f"), "x").unwrap();
        ctx.grant.outside_roots = true;
        let conf = Confinement::of(&ctx);
        assert!(
            conf.open(&outer.path().join("f"), "read")
                .unwrap()
                .is_some()
        );
    }
}
