//! The launcher's namespaces: new user, mount and network namespaces in which it is root (uid 0
//! maps to the user), the mounts that hide `denyRead` and freeze `denyWrite`, and `lo`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The user's ids, outside every namespace.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ids {
    pub(super) uid: libc::uid_t,
    pub(super) gid: libc::gid_t,
}

impl Ids {
    pub(super) fn current() -> Ids {
        // SAFETY: getuid and getgid cannot fail.
        unsafe {
            Ids {
                uid: libc::getuid(),
                gid: libc::getgid(),
            }
        }
    }
}

/// Enter new user, mount and network namespaces, as root inside the user namespace, with every
/// mount private to this one.
pub(super) fn enter(ids: Ids) -> Result<(), String> {
    // SAFETY: unshare in a single-threaded process.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWNET) } != 0 {
        let error = std::io::Error::last_os_error();
        return Err(format!(
            "cannot create user, mount and network namespaces ({error}){}",
            userns_hint()
        ));
    }
    map_ids(0, ids.uid, 0, ids.gid)?;
    // SAFETY: plain mount(2) with constant arguments.
    let private = unsafe {
        libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if private != 0 {
        return Err(format!(
            "cannot mount in the sandbox's mount namespace ({}){}",
            std::io::Error::last_os_error(),
            userns_hint()
        ));
    }
    Ok(())
}

/// Map `inside` to `outside` (uid, and gid likewise) for this process's user namespace.
pub(super) fn map_ids(
    inside_uid: libc::uid_t,
    outside_uid: libc::uid_t,
    inside_gid: libc::gid_t,
    outside_gid: libc::gid_t,
) -> Result<(), String> {
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text).map_err(|e| {
            let hint = match e.kind() {
                std::io::ErrorKind::PermissionDenied => userns_hint(),
                _ => String::new(),
            };
            format!("cannot write /proc/self/{file} of the sandbox's user namespace ({e}){hint}")
        })
    };
    // An unprivileged process may only write gid_map after giving up setgroups.
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{inside_uid} {outside_uid} 1\n"))?;
    write("gid_map", format!("{inside_gid} {outside_gid} 1\n"))
}

/// What the system may be refusing, for an error about user namespaces.
fn userns_hint() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|text| text.trim().to_owned())
    };
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return "; AppArmor restricts unprivileged user namespaces \
                (kernel.apparmor_restrict_unprivileged_userns=1): give mcpr an AppArmor profile \
                that allows userns, or set that sysctl to 0"
            .into();
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return "; unprivileged user namespaces are disabled \
                (kernel.unprivileged_userns_clone=0)"
            .into();
    }
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return "; user namespaces are disabled (user.max_user_namespaces=0)".into();
    }
    "; the sandbox needs unprivileged user namespaces".into()
}

/// Hide each path: an empty read-only tmpfs over a directory, `/dev/null` over anything else.
/// A path that does not exist has nothing to hide.
pub(super) fn hide(paths: &[std::path::PathBuf]) -> Result<(), String> {
    for path in paths {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let target = c_path(path)?;
        // SAFETY: mount(2) with valid C strings.
        let mounted = unsafe {
            if meta.is_dir() {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    c"size=4k,mode=0555".as_ptr().cast(),
                )
            } else {
                libc::mount(
                    c"/dev/null".as_ptr(),
                    target.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            }
        };
        if mounted != 0 {
            return Err(format!(
                "cannot hide denyRead path {} ({})",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Make each path read-only with a read-only bind mount of itself, keeping the flags the
/// mount it sits on has (a user namespace may not clear them).
pub(super) fn read_only(paths: &[std::path::PathBuf]) -> Result<(), String> {
    for path in paths {
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        let target = c_path(path)?;
        let fail = |what: &str| {
            format!(
                "cannot make denyWrite path {} read-only ({what}: {})",
                path.display(),
                std::io::Error::last_os_error()
            )
        };
        // SAFETY: mount(2) and statvfs(3) with valid C strings and a zeroed out-parameter.
        unsafe {
            if libc::mount(
                target.as_ptr(),
                target.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            ) != 0
            {
                return Err(fail("bind"));
            }
            let mut stat: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(target.as_ptr(), &mut stat) != 0 {
                return Err(fail("statvfs"));
            }
            let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
            for (st, ms) in [
                (libc::ST_NOSUID, libc::MS_NOSUID),
                (libc::ST_NODEV, libc::MS_NODEV),
                (libc::ST_NOEXEC, libc::MS_NOEXEC),
                (libc::ST_NOATIME, libc::MS_NOATIME),
                (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
                (libc::ST_RELATIME, libc::MS_RELATIME),
            ] {
                if stat.f_flag & st != 0 {
                    flags |= ms;
                }
            }
            if libc::mount(
                std::ptr::null(),
                target.as_ptr(),
                std::ptr::null(),
                flags,
                std::ptr::null(),
            ) != 0
            {
                return Err(fail("remount"));
            }
        }
    }
    Ok(())
}

/// Bring the loopback interface of the new network namespace up.
pub(super) fn loopback_up() -> Result<(), String> {
    let fail = || {
        format!(
            "cannot bring up the sandbox's loopback ({})",
            std::io::Error::last_os_error()
        )
    };
    // SAFETY: a datagram socket used for two interface ioctls on a zeroed ifreq, then closed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(fail());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        let ok = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request) == 0 && {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(fd, libc::SIOCSIFFLAGS, &request) == 0
        };
        let result = if ok { Ok(()) } else { Err(fail()) };
        libc::close(fd);
        result
    }
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("path {} contains a NUL byte", path.display()))
}
