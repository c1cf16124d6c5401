//! The user and group databases (passwd, group), through the C library so
//! that NSS sources (LDAP, sssd) answer as they do for every program.
//!
//! A C library without NSS (the commands built as static musl programs read
//! only `/etc/passwd`, `/etc/group` and nscd) asks `getent` about what it
//! does not find: the system's `getent` goes through NSS like any glibc
//! program, so a user known only to LDAP or sssd is still found.

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
    .or_else(|| without_nss(|| getent::passwd(&uid.to_string()).map(|p| (p.name, p.gid))))
}

/// The uid and passwd group of the user called `name`.
pub fn ids_of(name: &str) -> Option<(u32, u32)> {
    libc_ids_of(name).or_else(|| {
        without_nss(|| {
            getent::passwd(name)
                .filter(|p| p.name == name)
                .map(|p| (p.uid, p.gid))
        })
    })
}

/// [`ids_of`] as the C library alone answers it.
fn libc_ids_of(name: &str) -> Option<(u32, u32)> {
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
    .or_else(|| without_nss(|| getent::group(name).filter(|g| g.0 == name).map(|g| g.1)))
}

/// The name of group `gid`.
pub fn group_name(gid: u32) -> Option<String> {
    with_buffer(
        // SAFETY: every pointer is valid for the call and len is buf's size.
        |grp, buf, len, result| unsafe { libc::getgrgid_r(gid, grp, buf, len, result) },
        // SAFETY: on success gr_name points into the live buffer.
        |grp: &libc::group| unsafe { text(grp.gr_name) },
    )
    .or_else(|| without_nss(|| getent::group(&gid.to_string()).map(|g| g.0)))
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
            // Without NSS, a user only NSS knows is in its passwd group
            // alone; a user the C library knows has its groups already.
            if !cfg!(target_env = "gnu") && libc_ids_of(user).is_none() {
                if let Some(more) = getent::initgroups(user) {
                    groups.extend(more.into_iter().filter(|g| *g != gid));
                }
            }
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

/// `lookup` where the C library has no NSS, `None` with glibc (whose own
/// answer already went through NSS).
fn without_nss<T>(lookup: impl FnOnce() -> Option<T>) -> Option<T> {
    if cfg!(target_env = "gnu") {
        None
    } else {
        lookup()
    }
}

/// The system's `getent`, for C libraries without NSS (see the module
/// documentation). Compiled everywhere so that the tests run it.
pub mod getent {
    use std::process::{Command, Stdio};

    /// A passwd entry, as far as the commands need it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Passwd {
        pub name: String,
        pub uid: u32,
        pub gid: u32,
    }

    /// Where `getent` is looked for first.
    const GETENT: &str = "/usr/bin/getent";

    /// The first line `getent <database> <key>` prints; `None` when it
    /// finds nothing or cannot be run.
    fn query(database: &str, key: &str) -> Option<String> {
        if key.is_empty() || key.contains(['\0', '\n', ':']) {
            return None;
        }
        let program = if std::path::Path::new(GETENT).is_file() {
            GETENT
        } else {
            "getent"
        };
        let out = Command::new(program)
            .args(["--", database, key])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8(out.stdout).ok()?;
        text.lines().next().map(str::to_owned)
    }

    /// `name:password:uid:gid:gecos:home:shell`.
    pub fn parse_passwd(line: &str) -> Option<Passwd> {
        let mut f = line.split(':');
        let name = f.next()?.to_owned();
        let _password = f.next()?;
        let uid = f.next()?.parse().ok()?;
        let gid = f.next()?.parse().ok()?;
        (!name.is_empty()).then_some(Passwd { name, uid, gid })
    }

    /// `name:password:gid:members`: the name and gid.
    pub fn parse_group(line: &str) -> Option<(String, u32)> {
        let mut f = line.split(':');
        let name = f.next()?.to_owned();
        let _password = f.next()?;
        let gid = f.next()?.parse().ok()?;
        (!name.is_empty()).then_some((name, gid))
    }

    /// `user gid gid ...`: the groups after the name.
    pub fn parse_initgroups(line: &str) -> Option<Vec<u32>> {
        let mut words = line.split_whitespace();
        words.next()?;
        words.map(|w| w.parse().ok()).collect()
    }

    /// The passwd entry of a user name or uid.
    pub fn passwd(key: &str) -> Option<Passwd> {
        parse_passwd(&query("passwd", key)?)
    }

    /// The name and gid of a group name or gid.
    pub fn group(key: &str) -> Option<(String, u32)> {
        parse_group(&query("group", key)?)
    }

    /// The groups `user` is in besides its passwd group.
    pub fn initgroups(user: &str) -> Option<Vec<u32>> {
        parse_initgroups(&query("initgroups", user)?)
    }
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

    #[test]
    fn getent_lines_parse() {
        assert_eq!(
            getent::parse_passwd("alice:x:1001:100:Alice A:/home/alice:/bin/bash"),
            Some(getent::Passwd {
                name: "alice".into(),
                uid: 1001,
                gid: 100
            })
        );
        assert_eq!(getent::parse_passwd("alice:x:1001"), None);
        assert_eq!(getent::parse_passwd(":x:1:2:::"), None);
        assert_eq!(getent::parse_passwd("a:x:one:2:::"), None);
        assert_eq!(
            getent::parse_group("staff:x:50:alice,bob"),
            Some(("staff".into(), 50))
        );
        assert_eq!(getent::parse_group("staff:x"), None);
        assert_eq!(
            getent::parse_initgroups("alice        50 27"),
            Some(vec![50, 27])
        );
        assert_eq!(getent::parse_initgroups("root        "), Some(vec![]));
        assert_eq!(getent::parse_initgroups("root x"), None);
    }

    #[test]
    fn getent_answers_through_the_system() {
        let root = getent::passwd("0").unwrap();
        assert_eq!((root.name.as_str(), root.uid, root.gid), ("root", 0, 0));
        assert_eq!(getent::passwd("root").unwrap().uid, 0);
        assert_eq!(getent::group("0").unwrap().0, "root");
        assert!(getent::initgroups("root").is_some());
        assert_eq!(getent::passwd("no such user here"), None);
        assert_eq!(getent::passwd(""), None);
        assert_eq!(getent::passwd("a:b"), None);
    }
}
