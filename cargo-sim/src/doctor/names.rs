//! How a watched function or instruction is recognised in what `nm` and
//! `objdump` print: demangled names (legacy and v0), C symbols, mnemonics,
//! and whose crate a function is.

use super::known::Family;

/// Which family an instruction's mnemonic (as objdump prints it) belongs
/// to, if any.
pub(super) fn instruction(mnemonic: &str) -> Option<Family> {
    match mnemonic {
        "syscall" | "sysenter" => Some(Family::Syscalls),
        "rdtsc" | "rdtscp" => Some(Family::Tsc),
        "rdrand" | "rdseed" => Some(Family::CpuRandom),
        _ => None,
    }
}

/// Whether a (demangled) function is the spin-loop hint, which a debug build
/// calls rather than inlines: `core::hint::spin_loop`, its deprecated
/// `spin_loop_hint` and the `pause` intrinsic beneath them.
pub(super) fn spin_hint(symbol: &str) -> bool {
    let Some(path) = plain_path(symbol) else {
        return false;
    };
    matches!(
        path.trim(),
        "core::hint::spin_loop"
            | "core::sync::atomic::spin_loop_hint"
            | "core::core_arch::x86::sse2::_mm_pause"
    )
}

/// C functions that start a process, or a thread past `pthread_create`
/// (which a simulation runs as a simulated thread, so it is not here), the
/// socket calls a stub refuses, and descriptors only the kernel serves.
const C_FUNCTIONS: &[(&str, Family)] = &[
    ("clone", Family::RawThreads),
    ("clone3", Family::RawThreads),
    ("inotify_init", Family::KernelOnly),
    ("inotify_init1", Family::KernelOnly),
    ("fork", Family::Processes),
    ("vfork", Family::Processes),
    ("posix_spawn", Family::Processes),
    ("posix_spawnp", Family::Processes),
    ("execve", Family::Processes),
    ("execv", Family::Processes),
    ("execvp", Family::Processes),
    ("execvpe", Family::Processes),
    ("system", Family::Processes),
    ("popen", Family::Processes),
    ("connect", Family::Sockets),
    ("accept", Family::Sockets),
    ("accept4", Family::Sockets),
    ("sendto", Family::Sockets),
    ("sendmsg", Family::Sockets),
    ("sendmmsg", Family::Sockets),
    ("recvfrom", Family::Sockets),
    ("recvmsg", Family::Sockets),
    ("recvmmsg", Family::Sockets),
];

/// Which family a (demangled) symbol a function refers to belongs to, if
/// any. Legacy and v0 demangled forms are both understood; a dynamic
/// symbol's version (`fork@GLIBC_2.2.5`) is ignored.
pub(super) fn watched(symbol: &str) -> Option<Family> {
    let bare = symbol.split('@').next().unwrap_or(symbol);
    if let Some((_, f)) = C_FUNCTIONS.iter().find(|(c, _)| *c == bare) {
        return Some(*f);
    }
    let path = plain_path(symbol)?;
    let p: Vec<&str> = path
        .split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .collect();
    let after =
        |a: &str, next: &dyn Fn(&str) -> bool| p.windows(2).any(|w| w[0] == a && next(w[1]));
    let hit = |yes: bool, f: Family| yes.then_some(f);
    // Blocking I/O on a socket a stub stands for (binding one is simulated).
    let blocking = || {
        after("TcpStream", &|s| s.starts_with("connect"))
            || after("TcpListener", &|s| s == "accept" || s == "incoming")
            || after("UdpSocket", &|s| {
                s.starts_with("connect") || s.starts_with("send") || s.starts_with("recv")
            })
            || after("Socket", &|s| {
                s.starts_with("connect") || s.starts_with("accept") || s == "send_to"
            })
    };
    // std's Unix-domain sockets: socket(2) refuses the family.
    let unix = || {
        ["UnixStream", "UnixListener", "UnixDatagram"]
            .iter()
            .any(|t| {
                after(t, &|s| {
                    s.starts_with("connect")
                        || s.starts_with("bind")
                        || s == "pair"
                        || s == "unbound"
                })
            })
    };
    let process = || {
        after("Command", &|s| {
            s == "spawn" || s == "output" || s == "status"
        })
    };
    match p.as_slice() {
        // std::thread (spawn, Builder, scope) is not watched: its threads
        // are simulated threads of the node.
        ["std", "net", ..] => hit(blocking(), Family::Sockets),
        ["std", "os", "unix", "net", ..] => hit(unix(), Family::Sockets),
        ["std", "process", ..] => hit(process(), Family::Processes),
        // std's internals, which a caller refers to directly when a test
        // profile with optimizations inlines std's wrappers into it.
        ["std", "sys", rest @ ..] => {
            if rest.contains(&"process")
                && (process() || matches!(p.last(), Some(&"spawn") | Some(&"output")))
            {
                Some(Family::Processes)
            } else {
                hit(blocking() || unix(), Family::Sockets)
            }
        }
        ["socket2", ..] => hit(
            after("Socket", &|s| {
                s.starts_with("connect")
                    || s.starts_with("accept")
                    || s.starts_with("send")
                    || s.starts_with("recv")
            }),
            Family::Sockets,
        ),
        _ => {
            if p.iter().any(|s| *s == "_rdtsc" || *s == "__rdtscp") {
                Some(Family::Tsc)
            } else {
                hit(
                    p.iter()
                        .any(|s| s.starts_with("_rdrand") || s.starts_with("_rdseed")),
                    Family::CpuRandom,
                )
            }
        }
    }
}

/// A demangled name as a plain path: `<T>::f` (v0's inherent methods) as
/// `T::f`, generic arguments and `<impl ..>` segments dropped. `None` for a
/// trait method (`<T as Trait>::f`): those act on what is already open.
pub(super) fn plain_path(symbol: &str) -> Option<String> {
    let s = symbol.trim();
    let joined;
    let s = if s.starts_with('<') {
        let close = closing(s)?;
        let inner = &s[1..close];
        if top_level_as(inner) {
            return None;
        }
        joined = format!("{inner}{}", &s[close + 1..]);
        joined.as_str()
    } else {
        s
    };
    let mut out = String::new();
    let mut depth = 0usize;
    let mut prev = ' ';
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' if prev != '-' && depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        prev = c;
    }
    Some(out)
}

/// The crates a demangled function name belongs to: the first segment of
/// its path, and for `<T as Trait>::f` the first segments of both `T` and
/// `Trait` (the impl is in one of them). Generic arguments do not count: an
/// instance of std's generic with the caller's closure is std's function.
pub(super) fn owners(symbol: &str) -> Vec<String> {
    let s = symbol.trim();
    let first = |p: &str| {
        let p = p.trim().trim_start_matches('&').trim_start_matches("mut ");
        let p = p.trim_start_matches("dyn ");
        let end = p.find(['<', ':', ' ', '>']).unwrap_or(p.len());
        p[..end].to_string()
    };
    let mut out = Vec::new();
    match s.strip_prefix('<').and_then(|_| closing(s)) {
        Some(close) => match split_top_level_as(&s[1..close]) {
            Some((t, tr)) => {
                out.push(first(t));
                out.push(first(tr));
            }
            None => out.push(first(&s[1..close])),
        },
        None => out.push(first(s)),
    }
    out.retain(|o| !o.is_empty());
    out.dedup();
    out
}

/// The index of the `>` closing the `<` that starts `s` (`->` is not one).
pub(super) fn closing(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if prev != '-' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        prev = c;
    }
    None
}

fn split_top_level_as(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if prev != '-' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 && s[i..].starts_with(" as ") => {
                return Some((&s[..i], &s[i + 4..]));
            }
            _ => {}
        }
        prev = c;
    }
    None
}

pub(super) fn top_level_as(s: &str) -> bool {
    split_top_level_as(s).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watched_functions_are_recognized_in_both_manglings() {
        let t = Some(Family::RawThreads);
        let p = Some(Family::Processes);
        let s = Some(Family::Sockets);
        for (name, want) in [
            // Threads started through pthread_create are simulated.
            ("std::thread::functions::spawn", None),
            ("std::thread::spawn", None),
            (
                "<std::thread::builder::Builder>::spawn_unchecked::<app::f::{closure#0}, ()>",
                None,
            ),
            (
                "std::thread::scoped::<impl std::thread::builder::Builder>::spawn_scoped",
                None,
            ),
            ("std::thread::scoped::scope", None),
            ("pthread_create", None),
            ("pthread_create@GLIBC_2.34", None),
            ("pthread_mutex_lock", None),
            ("<std::sys::thread::unix::Thread>::new", None),
            // A thread made past it is not.
            ("clone", t),
            ("clone@GLIBC_2.2.5", t),
            ("clone3", t),
            ("nix::sched::clone", None),
            ("inotify_init1", Some(Family::KernelOnly)),
            ("std::thread::spawnhook::run_spawn_hooks", None),
            ("std::thread::sleep", None),
            ("std::sys::thread_local::native::eager::destroy", None),
            ("std::process::Command::spawn", p),
            ("<std::process::Command>::output", p),
            ("std::process::Command::new", None),
            ("std::process::exit", None),
            (
                "std::sys::process::unix::unix::<impl std::sys::process::unix::common::Command>::spawn",
                p,
            ),
            ("fork@GLIBC_2.2.5", p),
            ("posix_spawnp", p),
            ("std::net::tcp::TcpStream::connect", s),
            ("<std::net::tcp::TcpStream>::connect_timeout", s),
            ("std::net::tcp::TcpListener::accept", s),
            ("std::net::udp::UdpSocket::send_to::<&str>", s),
            ("std::os::unix::net::stream::UnixStream::connect", s),
            ("std::os::unix::net::listener::UnixListener::bind", s),
            (
                "<std::sys::net::connection::socket::TcpStream>::connect::inner",
                s,
            ),
            ("socket2::socket::Socket::connect", s),
            ("connect", s),
            // What the interposers serve: making and binding sockets, files.
            ("std::net::tcp::TcpListener::bind", None),
            ("std::net::udp::UdpSocket::bind::<&str>", None),
            ("std::net::tcp::TcpStream::peer_addr", None),
            ("socket2::socket::Socket::new", None),
            ("socket2::socket::Socket::bind", None),
            ("socket", None),
            ("std::fs::File::open", None),
            ("<std::fs::OpenOptions>::_open", None),
            ("open64", None),
            ("core::core_arch::x86::rdtsc::_rdtsc", Some(Family::Tsc)),
            (
                "core::core_arch::x86::rdrand::_rdrand64_step",
                Some(Family::CpuRandom),
            ),
            ("tokio::spawn", None),
            ("core::result::Result<T,E>::is_ok", None),
            (".rodata..Lanon.12.0", None),
            ("my::f::<fn() -> u32>", None),
        ] {
            assert_eq!(watched(name), want, "{name}");
        }
    }

    #[test]
    fn instructions_outside_the_seed_are_named() {
        assert_eq!(instruction("syscall"), Some(Family::Syscalls));
        assert_eq!(instruction("rdtscp"), Some(Family::Tsc));
        assert_eq!(instruction("rdseed"), Some(Family::CpuRandom));
        assert_eq!(instruction("call"), None);
        assert_eq!(
            instruction("pause"),
            None,
            "a pause is judged only where a known spinner's source put it (own.rs)"
        );
    }

    #[test]
    fn the_spin_loop_hint_is_known_in_its_debug_forms() {
        assert!(spin_hint("core::hint::spin_loop"));
        assert!(spin_hint("core::sync::atomic::spin_loop_hint"));
        assert!(spin_hint("core::core_arch::x86::sse2::_mm_pause"));
        assert!(!spin_hint("std::thread::yield_now"));
        assert!(!spin_hint(
            "<spin::relax::Spin as spin::relax::RelaxStrategy>::relax"
        ));
    }

    #[test]
    fn owners_are_the_path_not_the_generic_arguments() {
        assert_eq!(owners("double::common::expected"), ["double"]);
        assert_eq!(owners("double::doubles::{{closure}}"), ["double"]);
        assert_eq!(
            owners("<web::Notes as core::fmt::Debug>::fmt"),
            ["web", "core"]
        );
        assert_eq!(owners("<web::Notes>::save"), ["web"]);
        assert_eq!(
            owners("std::thread::spawn::<double::f::{closure#0}, u32>"),
            ["std"]
        );
        assert_eq!(
            owners("<&mut web::X as core::ops::Drop>::drop"),
            ["web", "core"]
        );
        assert_eq!(owners("_start"), ["_start"]);
    }
}
