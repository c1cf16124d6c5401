//! User database look-ups (passwd), through the C library so that NSS
//! sources (LDAP, sssd) work as they do for every other program.

/// A user's passwd entry: what a login needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passwd {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// Home directory.
    pub dir: String,
    /// Login shell as written; empty means /bin/sh to login(1).
    pub shell: String,
}

fn lookup(
    call: impl FnMut(*mut libc::passwd, *mut libc::c_char, usize, *mut *mut libc::passwd) -> i32,
) -> Option<Passwd> {
    slurm_common::users::with_buffer(call, |pwd: &libc::passwd| {
        // SAFETY: on success the string fields are null or point into the
        // buffer, which is alive while this runs.
        let text = |p| unsafe { slurm_common::users::text(p) }.unwrap_or_default();
        Some(Passwd {
            name: text(pwd.pw_name),
            uid: pwd.pw_uid,
            gid: pwd.pw_gid,
            dir: text(pwd.pw_dir),
            shell: text(pwd.pw_shell),
        })
    })
}

/// uid and primary gid of the user called `name`.
pub use slurm_common::users::ids_of as uid_of;

/// The passwd entry of `uid`.
pub fn entry_of(uid: u32) -> Option<Passwd> {
    lookup(|pwd, buf, len, result| {
        // SAFETY: every pointer is valid for the call; len is buf's size.
        unsafe { libc::getpwuid_r(uid, pwd, buf, len, result) }
    })
}

/// Login name of `uid`.
pub fn name_of(uid: u32) -> Option<String> {
    entry_of(uid).map(|p| p.name)
}

pub use slurm_common::users::group_list;

/// The supplementary groups a login of `user` (`uid`) gets: its groups
/// around its passwd group, not around the group a job runs as; `gid` only
/// stands in for a user passwd does not know.
pub fn login_groups(user: &str, uid: u32, gid: u32) -> Vec<u32> {
    let login_gid = entry_of(uid).map_or(gid, |pw| pw.gid);
    group_list(user, login_gid)
}

/// Effective uid of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn root_and_self() {
        assert_eq!(uid_of("root"), Some((0, 0)));
        assert_eq!(name_of(0).as_deref(), Some("root"));
        assert_eq!(uid_of("no-such-user-\u{e9}"), None);
        assert_eq!(uid_of("a\0b"), None);
        assert!(group_list("root", 0).contains(&0));
        let root = entry_of(0).unwrap();
        assert_eq!((root.name.as_str(), root.uid, root.gid), ("root", 0, 0));
        assert!(root.dir.starts_with('/'), "{root:?}");
        assert_eq!(entry_of(u32::MAX - 7), None);
    }

    /// Slurm 22.05 ran root's `--uid=nobody` job as gid root with nobody's
    /// groups: the job's group does not replace the login group.
    #[test]
    fn login_groups_come_from_the_passwd_group() {
        let groups = login_groups("root", 0, 4242);
        assert!(groups.contains(&0), "{groups:?}");
        assert!(!groups.contains(&4242), "{groups:?}");
        assert_eq!(
            login_groups("no-such-user-x", u32::MAX - 7, 4242),
            vec![4242]
        );
    }
}
