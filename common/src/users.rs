//! The user and group databases (passwd, group), through the C library so
//! that NSS sources (LDAP, sssd) answer as they do for every program.

use std::ffi::{CStr, CString};

/// Scratch buffer sizes for the `get*_r` calls: grown while too small.
const INITIAL_BUF: usize = 4096;
const MAX_BUF: usize = 1 << 22;

/// Calls a `get*_r` function (getpwuid_r, getpwnam_r, getgrgid_r, ...)
/// with a buffer that grows while it is too small (ERANGE); `read` turns
/// the filled record into the answer, while the buffer its strings point
/// into is alive. `R` must be a plain C struct (all-zero is valid).
pub fn with_buffer<R, T>(
    mut call: impl FnMut(*mut R, *mut libc::c_char, usize, *mut *mut R) -> i32,
    read: impl FnOnce(&R) -> Option<T>,
) -> Option<T> {
    let mut size = INITIAL_BUF;
    loop {
        let mut buf = vec![0 as libc::c_char; size];
        // SAFETY: passwd and group are plain C structs; all-zero is a valid
        // value that the call overwrites.
        let mut record: R = unsafe { std::mem::zeroed() };
        let mut result: *mut R = std::ptr::null_mut();
        let rc = call(&mut record, buf.as_mut_ptr(), buf.len(), &mut result);
        if rc == libc::ERANGE && size < MAX_BUF {
            size *= 4;
            continue;
        }
        if rc != 0 || result.is_null() {
            return None;
        }
        // `buf`, which the record's strings point into, is alive here.
        return read(&record);
    }
}

/// A NUL-terminated string of a record, `None` for a null pointer.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that outlives the call.
pub unsafe fn text(p: *const libc::c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: as the caller promises.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The login name and passwd group of user `uid`.
pub fn login_of(uid: u32) -> Option<(String, u32)> {
    with_buffer(
        // SAFETY: every pointer is valid for the call and len is buf's size.
        |pwd, buf, len, result| unsafe { libc::getpwuid_r(uid, pwd, buf, len, result) },
        // SAFETY: on success pw_name points into the live buffer.
        |pwd: &libc::passwd| Some((unsafe { text(pwd.pw_name) }?, pwd.pw_gid)),
    )
}

/// The uid and passwd group of the user called `name`.
pub fn ids_of(name: &str) -> Option<(u32, u32)> {
    let c = CString::new(name).ok()?;
    with_buffer(
        // SAFETY: every pointer is valid for the call and len is buf's size;
        // `c` is NUL-terminated and outlives the call.
        |pwd, buf, len, result| unsafe { libc::getpwnam_r(c.as_ptr(), pwd, buf, len, result) },
        |pwd: &libc::passwd| Some((pwd.pw_uid, pwd.pw_gid)),
    )
}

/// The gid of the group called `name`.
pub fn gid_of(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    with_buffer(
        // SAFETY: every pointer is valid for the call and len is buf's size;
        // `c` is NUL-terminated and outlives the call.
        |grp, buf, len, result| unsafe { libc::getgrnam_r(c.as_ptr(), grp, buf, len, result) },
        |grp: &libc::group| Some(grp.gr_gid),
    )
}

/// The name of group `gid`.
pub fn group_name(gid: u32) -> Option<String> {
    with_buffer(
        // SAFETY: every pointer is valid for the call and len is buf's size.
        |grp, buf, len, result| unsafe { libc::getgrgid_r(gid, grp, buf, len, result) },
        // SAFETY: on success gr_name points into the live buffer.
        |grp: &libc::group| unsafe { text(grp.gr_name) },
    )
}

/// Every group `user` belongs to, `gid` included (what initgroups would
/// set). Empty when the user is unknown.
pub fn group_list(user: &str, gid: u32) -> Vec<u32> {
    let Ok(c) = CString::new(user) else {
        return Vec::new();
    };
    let mut n: libc::c_int = 32;
    loop {
        let mut groups: Vec<libc::gid_t> = vec![0; usize::try_from(n).unwrap_or(32)];
        let mut count = n;
        // SAFETY: groups has room for `count` entries; getgrouplist writes at
        // most that many and reports the needed size when it is too small.
        let rc = unsafe { libc::getgrouplist(c.as_ptr(), gid, groups.as_mut_ptr(), &mut count) };
        if rc >= 0 {
            groups.truncate(usize::try_from(count).unwrap_or(0));
            return groups;
        }
        if count <= n || count > 65_536 {
            return Vec::new();
        }
        n = count;
    }
}

/// The names of the groups user `uid` is in: its passwd group and the
/// others the group database lists it in (a group without a name by its
/// number). What a partition's AllowGroups is matched against; empty for
/// a user passwd does not know.
pub fn group_names_of(uid: u32) -> Vec<String> {
    let Some((name, gid)) = login_of(uid) else {
        return Vec::new();
    };
    group_list(&name, gid)
        .into_iter()
        .map(|g| group_name(g).unwrap_or_else(|| g.to_string()))
        .collect()
}

/// Whether a partition's AllowGroups list (`allowed`) lets in a user in
/// `groups`: one of them is named.
pub fn allows_groups(allowed: &[String], groups: &[String]) -> bool {
    groups.iter().any(|g| allowed.contains(g))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn root_and_its_group() {
        assert_eq!(login_of(0), Some(("root".to_string(), 0)));
        assert_eq!(group_name(0).as_deref(), Some("root"));
        assert!(group_list("root", 0).contains(&0));
        assert!(group_names_of(0).iter().any(|g| g == "root"));
        assert_eq!(login_of(u32::MAX - 7), None);
        assert_eq!(ids_of("root"), Some((0, 0)));
        assert_eq!(gid_of("root"), Some(0));
        assert_eq!(ids_of("no such user here"), None);
        assert_eq!(gid_of("a\0b"), None);
        assert!(group_names_of(u32::MAX - 7).is_empty());
        assert!(group_list("a\0b", 0).is_empty());
        let allowed = ["staff".to_string(), "wheel".to_string()];
        assert!(allows_groups(&allowed, &["users".into(), "wheel".into()]));
        assert!(!allows_groups(&allowed, &["users".into()]));
        assert!(!allows_groups(&allowed, &[]));
    }
}
