//! Output paths never overwrite input: a rejects file, a `gen` output or an
//! export directory is refused, before anything is created or truncated,
//! when it is an input file of the command (by canonical path, or on unix by
//! device and inode) or lies inside the data directory.

use std::io;
use std::path::{Component, Path, PathBuf};

/// Most symbolic links followed while resolving one path.
const MAX_LINKS: usize = 40;

/// Why an output path is refused: a one-line message naming both paths.
#[derive(Debug)]
pub struct Refusal(pub String);

/// Checks the output `output` (given as option `what`) against the input
/// files of the command and its data directory.
pub fn check_output(
    what: &str,
    output: &Path,
    inputs: &[&Path],
    data_dir: &Path,
) -> Result<(), Refusal> {
    let resolved = resolve(output).map_err(|e| {
        Refusal(format!(
            "{what} {}: cannot resolve the path: {e}",
            output.display()
        ))
    })?;
    for input in inputs {
        if same_file(output, &resolved, input) {
            return Err(Refusal(format!(
                "{what} {} is the input file {}: it would be overwritten",
                output.display(),
                input.display()
            )));
        }
    }
    if let Ok(data) = resolve(data_dir)
        && resolved.starts_with(&data)
    {
        return Err(Refusal(format!(
            "{what} {} lies inside the data directory {}",
            output.display(),
            data_dir.display()
        )));
    }
    Ok(())
}

/// Whether `output` (resolved to `resolved`) and `input` name the same file.
fn same_file(output: &Path, resolved: &Path, input: &Path) -> bool {
    if resolve(input).is_ok_and(|i| i == resolved) {
        return true;
    }
    same_inode(output, input)
}

#[cfg(unix)]
fn same_inode(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_inode(_: &Path, _: &Path) -> bool {
    false
}

/// The absolute path `path` names once every symbolic link is followed,
/// whether or not it exists: the longest existing ancestor canonicalized,
/// the rest appended (`.` dropped, `..` taken lexically); a dangling link
/// resolves to its target.
pub fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut path = std::path::absolute(path)?;
    for _ in 0..MAX_LINKS {
        if let Ok(canonical) = std::fs::canonicalize(&path) {
            return Ok(canonical);
        }
        // A dangling link: where it points.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            let target = std::fs::read_link(&path)?;
            // default: A link without a parent directory is relative to the current one.
            let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
            path = std::path::absolute(base.join(target))?;
            continue;
        }
        // Missing: resolve the parent, keep the last component.
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(normalize(&path));
        };
        let parent = resolve(parent)?;
        return Ok(normalize(&parent.join(name)));
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// `.` dropped, `..` removes the previous component.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
