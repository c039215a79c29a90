//! What to tell a user whose file could not be written, by what the operating system said:
//! every writer of the tool (run folders, lab workspaces, answer caches, exports) gives the
//! same fix; callers add where else to write (`-o DIR`, `workspace:`).

/// The fix for a failed write, to follow the operating system's message; callers add where
/// else to write (`-o DIR`, `workspace:`).
pub fn write_hint(error: &std::io::Error) -> &'static str {
    match error.kind() {
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
            "the disk is full: free some space on it"
        }
        std::io::ErrorKind::ReadOnlyFilesystem => "the file system is read-only: write elsewhere",
        std::io::ErrorKind::PermissionDenied => {
            "you may not write there: fix the folder's permissions"
        }
        _ => "check that the folder exists and is writable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_failure_has_its_own_fix() {
        let hint = |kind| write_hint(&std::io::Error::from(kind));
        assert!(hint(std::io::ErrorKind::StorageFull).contains("free some space"));
        assert!(hint(std::io::ErrorKind::ReadOnlyFilesystem).contains("read-only"));
        assert!(hint(std::io::ErrorKind::PermissionDenied).contains("permissions"));
        assert!(hint(std::io::ErrorKind::NotFound).contains("exists"));
    }
}
