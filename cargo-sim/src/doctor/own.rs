//! Code read where it ends up: in the executables.
//!
//! A test target's code (an integration test, its `mod common;` helpers, a
//! library's unit tests, an example) is compiled straight into its
//! executable, with no library whose relocations could be read; so is a
//! dependency's generic or `#[inline]` function instantiated by its caller
//! (rustix's `syscall` wrappers, inlined into whoever calls rustix). So the
//! functions to judge are picked from the executable's symbol table (`nm`:
//! the workspace's, by the first segment of their path, and a
//! dependency's that no library read holds), only they are disassembled
//! (`objdump -d`, one range per run of them, which keeps it to a few small
//! ranges in a large binary), and each reference to a watched function is
//! looked up: a direct call or jump names its target; a call through the
//! GOT (how Rust reaches another crate's function) names a slot, which the
//! dynamic relocations (`objdump -R`) resolve to a function or an import.
//! A `syscall`, `rdtsc` or `rdrand` instruction there counts as itself.
//! So does a `pause` (or, in a debug build, a call to the spin-loop hint),
//! as a candidate spin wait: mod.rs keeps it only where the debug
//! information's inlined frames put it in a crate known to wait by spinning
//! alone (`known::SPINNERS`), since std's locks, parking_lot and crossbeam
//! spin a little too before they park or yield.
//!
//! The place is read from the debug information (`addr2line -i`, at the
//! instruction's own address): of the inlined frames there, the innermost
//! one in the workspace's sources, so a helper inlined into a test is named
//! at its own line. Why the binary and not the source text: a name in the
//! source cannot tell a call that is compiled and linked from one that is
//! commented out, behind a cfg the simulation turns off, or never
//! referenced, and an import (`use std::thread::spawn`) hides the call;
//! the linked code has none of these doubts, and its debug information
//! gives the line. Without debug information (`debug = false` for the test
//! profile) the function is still named, without a line.

use super::known::Family;
use super::names::{instruction, spin_hint, watched};
use super::objects::{instruction_line, mnemonic, stream, Tools};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whose code a judged function is.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Owner {
    Workspace,
    /// A dependency, by crate name.
    Dependency(String),
}

/// A place in judged code that reaches something outside the seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Site {
    pub(super) owner: Owner,
    /// The function it is in, demangled.
    pub(super) function: String,
    /// The watched function it calls, or the instruction.
    pub(super) callee: String,
    pub(super) family: Family,
    pub(super) address: u64,
    /// The file and line the debug information gives for it.
    pub(super) line: Option<(PathBuf, u32)>,
    /// The innermost frame's file: which package's source the code is
    /// (two versions of a crate share its name).
    pub(super) source: Option<PathBuf>,
    /// Every inlined frame's file, innermost first: whose code put the
    /// instruction there (a spin wait inlined into its caller).
    pub(super) frames: Vec<PathBuf>,
}

/// A symbol of an executable, as `nm -S` gives it, raw and demangled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Sym {
    pub(super) address: u64,
    pub(super) size: Option<u64>,
    pub(super) kind: char,
    pub(super) raw: String,
    pub(super) demangled: String,
}

/// A function symbol picked for judging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Symbol {
    pub(super) address: u64,
    pub(super) size: Option<u64>,
    pub(super) demangled: String,
}

/// What a GOT slot holds once the program is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    Address(u64),
    Import(String),
}

/// `nm -S` lines: `address [size] type name`, the name possibly with spaces.
pub(super) fn parse_nm_sized(text: &str) -> Vec<(u64, Option<u64>, char, String)> {
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(4, ' ');
            let address = hex(it.next()?)?;
            let second = it.next()?;
            let third = it.next()?;
            if second.len() == 1 {
                // No size: `address type name`, the name's rest in the 4th.
                let name = match it.next() {
                    Some(rest) => format!("{third} {rest}"),
                    None => third.to_string(),
                };
                return Some((address, None, second.chars().next()?, name));
            }
            let size = hex(second)?;
            Some((
                address,
                Some(size),
                third.chars().next()?,
                it.next()?.to_string(),
            ))
        })
        .collect()
}

/// `objdump -R`: each GOT slot's target.
pub(super) fn parse_dynamic_relocations(text: &str) -> BTreeMap<u64, Slot> {
    let mut slots = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(offset), Some(kind), Some(value)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Ok(offset) = u64::from_str_radix(offset, 16) else {
            continue;
        };
        let slot = if let Some(addend) = value.strip_prefix("*ABS*+0x") {
            match u64::from_str_radix(addend, 16) {
                Ok(a) => Slot::Address(a),
                Err(_) => continue,
            }
        } else if kind.ends_with("GLOB_DAT") || kind.ends_with("JUMP_SLOT") {
            let name = value.split(['@', '+']).next().unwrap_or(value);
            Slot::Import(name.to_string())
        } else {
            continue;
        };
        slots.insert(offset, slot);
    }
    slots
}

/// The addresses an instruction refers to: a direct branch's target and
/// the address objdump computes for a RIP-relative operand (`# 4cd681`).
pub(super) fn referenced(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let m = mnemonic(text);
    if m.starts_with("call") || m.starts_with("jmp") {
        let operand = text[text.find(m).unwrap_or(0) + m.len()..].trim_start();
        if let Some((target, _)) = operand.split_once(" <") {
            if let Ok(a) = u64::from_str_radix(target, 16) {
                out.push(a);
            }
        }
    }
    if let Some((_, comment)) = text.rsplit_once("# ") {
        let hex = comment.split_whitespace().next().unwrap_or("");
        if let Ok(a) = u64::from_str_radix(hex, 16) {
            out.push(a);
        }
    }
    out
}

/// The functions of an executable, which of them are judged, the watched
/// ones and the GOT.
pub(super) struct Image {
    /// Every function symbol, by address.
    pub(super) functions: Vec<Symbol>,
    /// Whose each one is, if it is judged.
    pub(super) owner: Vec<Option<Owner>>,
    pub(super) watched: BTreeMap<u64, (String, Family)>,
    pub(super) slots: BTreeMap<u64, Slot>,
}

impl Image {
    pub(super) fn new(
        symbols: &[Sym],
        slots: BTreeMap<u64, Slot>,
        judged: &dyn Fn(&Sym) -> Option<Owner>,
    ) -> Image {
        let mut picked: Vec<(Symbol, Option<Owner>)> = symbols
            .iter()
            .filter(|s| matches!(s.kind, 't' | 'T' | 'w' | 'W'))
            .map(|s| {
                let f = Symbol {
                    address: s.address,
                    size: s.size,
                    demangled: s.demangled.clone(),
                };
                (f, judged(s))
            })
            .collect();
        picked.sort_by(|a, b| (a.0.address, &a.0.demangled).cmp(&(b.0.address, &b.0.demangled)));
        let (functions, owner): (Vec<Symbol>, Vec<Option<Owner>>) = picked.into_iter().unzip();
        let watched = functions
            .iter()
            .filter_map(|f| {
                let family = if spin_hint(&f.demangled) {
                    Family::Spins
                } else {
                    watched(&f.demangled)?
                };
                Some((f.address, (f.demangled.clone(), family)))
            })
            .collect();
        Image {
            functions,
            owner,
            watched,
            slots,
        }
    }

    /// The address ranges to disassemble: each maximal run of judged
    /// functions in address order.
    pub(super) fn runs(&self) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut open: Option<(u64, u64)> = None;
        for (i, f) in self.functions.iter().enumerate() {
            let next = self.functions.get(i + 1).map(|n| n.address);
            let end = f.size.map(|s| f.address + s).or(next).unwrap_or(f.address);
            match (self.owner[i].is_some(), open) {
                (true, None) => open = Some((f.address, end)),
                (true, Some((s, e))) => open = Some((s, e.max(end))),
                // Another name inside the run (an alias) does not end it.
                (false, Some((_, e))) if f.address < e => {}
                (false, Some(run)) => {
                    runs.push(run);
                    open = None;
                }
                (false, None) => {}
            }
        }
        runs.extend(open);
        runs.retain(|(s, e)| e > s);
        runs
    }

    /// The judged function that holds `address`, if any. Functions do not
    /// nest: only the symbols at the nearest start at or below it can hold
    /// it (one function may have several names).
    pub(super) fn judged_at(&self, address: u64) -> Option<(&str, &Owner)> {
        let i = self.functions.partition_point(|f| f.address <= address);
        let start = self.functions.get(i.checked_sub(1)?)?.address;
        let first = self.functions.partition_point(|f| f.address < start);
        (first..i)
            .filter_map(|j| Some((&self.functions[j], self.owner[j].as_ref()?)))
            .find(|(f, _)| f.size.is_none_or(|s| address < f.address + s))
            .map(|(f, o)| (f.demangled.as_str(), o))
    }

    /// What an address referred to by an instruction is, if it is watched.
    pub(super) fn target(&self, address: u64) -> Option<(String, Family)> {
        match self.slots.get(&address) {
            Some(Slot::Address(a)) => self.watched.get(a).cloned(),
            Some(Slot::Import(name)) => watched(name).map(|f| (name.clone(), f)),
            None => self.watched.get(&address).cloned(),
        }
    }

    /// The watched references and instructions in a disassembled range.
    pub(super) fn sites(&self, listing: impl BufRead) -> std::io::Result<Vec<Site>> {
        let mut out: Vec<Site> = Vec::new();
        for line in listing.lines() {
            let line = line?;
            let Some((address, text)) = instruction_line(&line) else {
                continue;
            };
            let Some((function, owner)) = self.judged_at(address) else {
                continue;
            };
            let m = mnemonic(text);
            let mut found: Vec<(String, Family)> = Vec::new();
            if let Some(family) = instruction(m) {
                found.push((format!("the `{m}` instruction"), family));
            } else if m == "pause" {
                found.push(("the `pause` instruction".to_string(), Family::Spins));
            }
            found.extend(referenced(text).into_iter().filter_map(|a| self.target(a)));
            for (callee, family) in found {
                if !out
                    .iter()
                    .any(|s| s.address == address && s.callee == callee)
                {
                    out.push(Site {
                        owner: owner.clone(),
                        function: function.to_string(),
                        callee,
                        family,
                        address,
                        line: None,
                        source: None,
                        frames: Vec::new(),
                    });
                }
            }
        }
        Ok(out)
    }
}

/// Runs closer than this are disassembled as one: an objdump run costs
/// about as much as disassembling this much code.
const GAP_MERGED: u64 = 128 * 1024;
/// Past this many ranges, one range from the first to the last is cheaper.
const RANGES_MAX: usize = 32;

/// The ranges objdump is run on: runs closer than [`GAP_MERGED`] merged,
/// and one span when that still leaves more than [`RANGES_MAX`].
pub(super) fn ranges(runs: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &(s, e) in runs {
        match out.last_mut() {
            Some(last) if s.saturating_sub(last.1) < GAP_MERGED => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    if out.len() > RANGES_MAX {
        let span = (out[0].0, out.iter().map(|r| r.1).max().unwrap_or(out[0].1));
        return vec![span];
    }
    out
}

fn output(tool: &str, args: &[String], path: &Path) -> Result<String, String> {
    let out = Command::new(tool)
        .args(args)
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run {tool}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{tool} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An executable's symbols, raw and demangled (two `nm -p` runs, whose
/// order lines up).
pub(super) fn read_image(nm: &str, exe: &Path) -> Result<Vec<Sym>, String> {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let raw = parse_nm_sized(&output(nm, &args(&["-p", "-S", "--defined-only"]), exe)?);
    if raw.is_empty() {
        return Err(
            "it has no symbol table (stripped? set `strip = false` for the test profile)".into(),
        );
    }
    let demangled = parse_nm_sized(&output(
        nm,
        &args(&["-p", "-S", "-C", "--defined-only"]),
        exe,
    )?);
    if demangled.len() != raw.len() {
        return Err(format!(
            "{nm} listed {} symbols raw and {} demangled",
            raw.len(),
            demangled.len()
        ));
    }
    Ok(raw
        .into_iter()
        .zip(demangled)
        .map(|((address, size, kind, raw), (_, _, _, demangled))| Sym {
            address,
            size,
            kind,
            raw,
            demangled,
        })
        .collect())
}

/// The places in one executable's judged functions (`judged` says which,
/// and whose) that reach something outside the seed, each with its line
/// when the debug information has one (`root`: the workspace's folder,
/// whose sources are preferred among inlined frames).
pub(super) fn sites(
    tools: &Tools,
    exe: &Path,
    symbols: &[Sym],
    judged: &dyn Fn(&Sym) -> Option<Owner>,
    root: &Path,
) -> Result<Vec<Site>, String> {
    // A static executable has no dynamic relocations: its calls are direct.
    let slots = output(&tools.objdump, &["-R".to_string()], exe)
        .map(|t| parse_dynamic_relocations(&t))
        .unwrap_or_default();
    let image = Image::new(symbols, slots, judged);
    let mut sites = Vec::new();
    for (start, stop) in ranges(&image.runs()) {
        let start = format!("--start-address=0x{start:x}");
        let stop = format!("--stop-address=0x{stop:x}");
        let args = ["-d", "--no-show-raw-insn", start.as_str(), stop.as_str()];
        sites.extend(stream(&tools.objdump, &args, exe, |l| image.sites(l))?);
    }
    if !sites.is_empty() {
        let mut a: Vec<String> = ["-a", "-f", "-i", "-C", "-e"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.push(exe.display().to_string());
        a.extend(sites.iter().map(|s| format!("0x{:x}", s.address)));
        let out = Command::new(&tools.addr2line)
            .args(&a)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", tools.addr2line))?;
        let lines = parse_addr2line(&String::from_utf8_lossy(&out.stdout), root);
        for s in &mut sites {
            if let Some(found) = lines.get(&s.address) {
                s.line = found.line.clone();
                s.source = found.source.clone();
                s.frames = found.frames.clone();
            }
        }
    }
    Ok(sites)
}

/// Where an address is, by the debug information.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Located {
    /// The innermost frame under the workspace's folder, else the
    /// innermost one that has a line.
    pub(super) line: Option<(PathBuf, u32)>,
    /// The innermost frame's file.
    pub(super) source: Option<PathBuf>,
    /// Every frame's file, innermost first.
    pub(super) frames: Vec<PathBuf>,
}

/// `addr2line -a -f -i` output: per address, its inlined frames innermost
/// first.
pub(super) fn parse_addr2line(text: &str, root: &Path) -> BTreeMap<u64, Located> {
    let mut out: BTreeMap<u64, Located> = BTreeMap::new();
    let mut frames: Vec<(PathBuf, u32)> = Vec::new();
    let mut current: Option<u64> = None;
    let mut finish = |at: Option<u64>, frames: &mut Vec<(PathBuf, u32)>| {
        if let Some(a) = at {
            let line = frames
                .iter()
                .find(|(p, _)| p.starts_with(root))
                .or(frames.first())
                .cloned();
            let source = frames.first().map(|(p, _)| p.clone());
            let files = frames.iter().map(|(p, _)| p.clone()).collect();
            out.insert(
                a,
                Located {
                    line,
                    source,
                    frames: files,
                },
            );
        }
        frames.clear();
    };
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some(hex) = l.strip_prefix("0x") {
            finish(current, &mut frames);
            current = u64::from_str_radix(hex.trim(), 16).ok();
            continue;
        }
        // A function name, then its location.
        let Some(location) = lines.next() else {
            break;
        };
        let location = location.split(" (discriminator").next().unwrap_or(location);
        if let Some((file, line)) = location.rsplit_once(':') {
            if let (false, Ok(n)) = (file.starts_with("??"), line.trim().parse::<u32>()) {
                if n > 0 {
                    let p = Path::new(file);
                    frames.push((
                        if p.is_relative() {
                            root.join(p)
                        } else {
                            p.to_path_buf()
                        },
                        n,
                    ));
                }
            }
        }
    }
    finish(current, &mut frames);
    out
}

#[cfg(test)]
mod tests {
    use super::super::names::owners;
    use super::*;
    use std::collections::BTreeSet;

    const NM: &str = "\
0000000000192a50 000000000000004a t std::thread::functions::spawn
0000000000199070 0000000000000020 t std::thread::join_handle::JoinHandle<T>::join
000000000019f300 00000000000000b6 t double::common::expected
000000000019f3c0 0000000000000030 t double::common::quiet
000000000019f400 0000000000000010 t core::ptr::drop_in_place<u32>
000000000019f880 0000000000000015 t double::main
00000000001a17f0 000000000000000e T helper::double
00000000001a2000 0000000000000010 t rustix::backend::arch::asm::syscall0_readonly
0000000000648030 T _Unwind_Resume@plt
0000000000200000 0000000000000010 T fork
0000000000192b00 0000000000000010 t core::hint::spin_loop
";

    fn image() -> Image {
        let crates: BTreeSet<String> = ["double", "helper"].iter().map(|s| s.to_string()).collect();
        let symbols: Vec<Sym> = parse_nm_sized(NM)
            .into_iter()
            .map(|(address, size, kind, name)| Sym {
                address,
                size,
                kind,
                raw: name.clone(),
                demangled: name,
            })
            .collect();
        let judged = |s: &Sym| -> Option<Owner> {
            let owners = owners(&s.demangled);
            if owners.iter().any(|o| crates.contains(o)) {
                Some(Owner::Workspace)
            } else if owners.iter().any(|o| o == "rustix") {
                Some(Owner::Dependency("rustix".into()))
            } else {
                None
            }
        };
        let slots = parse_dynamic_relocations(
            "0000000000d15ac8 R_X86_64_RELATIVE  *ABS*+0x0000000000192a50\n\
             0000000000d15ad0 R_X86_64_GLOB_DAT  posix_spawnp@GLIBC_2.2.5\n\
             0000000000d15ad8 R_X86_64_RELATIVE  *ABS*+0x0000000000199070\n\
             0000000000d15ae0 R_X86_64_JUMP_SLOT  clone@GLIBC_2.2.5\n",
        );
        Image::new(&symbols, slots, &judged)
    }

    #[test]
    fn nm_lines_with_and_without_sizes() {
        let s = parse_nm_sized(NM);
        assert_eq!(
            s[0],
            (
                0x192a50,
                Some(0x4a),
                't',
                "std::thread::functions::spawn".into()
            )
        );
        assert_eq!(s[1].3, "std::thread::join_handle::JoinHandle<T>::join");
        assert_eq!(s[8], (0x648030, None, 'T', "_Unwind_Resume@plt".into()));
    }

    #[test]
    fn runs_cover_the_judged_functions_only() {
        let image = image();
        assert_eq!(
            image.runs(),
            // `double::main`, `helper::double` and rustix's wrapper have no
            // one else's symbol between them: one run, whose gaps are no
            // one's function.
            [(0x19f300, 0x19f3f0), (0x19f880, 0x1a2010)]
        );
        assert_eq!(
            image.judged_at(0x19f30f).map(|(f, _)| f),
            Some("double::common::expected")
        );
        assert_eq!(
            image.judged_at(0x19f3f8).map(|(f, _)| f),
            None,
            "a gap is no one's"
        );
        assert_eq!(image.judged_at(0x192a60).map(|(f, _)| f), None, "std's");
    }

    #[test]
    fn close_runs_are_one_range_and_many_are_one_span() {
        let k = 1024;
        assert_eq!(
            ranges(&[(0, 10), (100 * k, 101 * k), (400 * k, 401 * k)]),
            [(0, 101 * k), (400 * k, 401 * k)]
        );
        let many: Vec<(u64, u64)> = (0..40).map(|i| (i * 200 * k, i * 200 * k + 5)).collect();
        assert_eq!(ranges(&many), [(0, 39 * 200 * k + 5)]);
    }

    #[test]
    fn calls_direct_through_the_got_and_instructions_are_found() {
        let listing = "\
000000000019f300 <_ZN6double6common8expected17h49da559f10f04eafE>:
  19f30f:\tcall   192a50 <_ZN3std6thread9functions5spawn17hb19746880c702249E>
  19f31c:\tcall   199070 <_ZN3std6thread11join_handle19JoinHandle$LT$T$GT$4join17ha459c6413a1852aaE>
  19f320:\tcall   *0xb67a2(%rip)        # d15ac8 <_DYNAMIC+0x448>
  19f326:\tmov    0xb67a4(%rip),%rax        # d15ad0 <_DYNAMIC+0x450>
  19f32d:\tcall   *%rax
  19f32f:\trdtsc
  19f331:\tjmp    200000 <fork>
  19f333:\tcall   *0xb67a7(%rip)        # d15ae0 <_DYNAMIC+0x460>
  19f339:\tpause
  19f33b:\tcall   192b00 <_ZN4core4hint9spin_loop17hE>

000000000019f3c0 <_ZN6double6common5quiet17hE>:
  19f3c0:\tcall   *0xb6712(%rip)        # d15ad8 <_DYNAMIC+0x458>
  19f3c6:\tret

00000000001a2000 <_ZN6rustix7backend4arch3asm17syscall0_readonly17hE>:
  1a2000:\tmov    %rdi,%rax
  1a2003:\tsyscall
  1a2005:\tret
";
        let sites = image().sites(listing.as_bytes()).unwrap();
        let got: Vec<(u64, &str, Family)> = sites
            .iter()
            .map(|s| (s.address, s.callee.as_str(), s.family))
            .collect();
        // std::thread::spawn, called directly (0x19f30f) and through the
        // GOT (0x19f320), makes a simulated thread: not a site. A thread
        // made with clone is; so is every spin-loop hint, a candidate that
        // mod.rs keeps only in a known spinner's code.
        assert_eq!(
            got,
            [
                (0x19f326, "posix_spawnp", Family::Processes),
                (0x19f32f, "the `rdtsc` instruction", Family::Tsc),
                (0x19f331, "fork", Family::Processes),
                (0x19f333, "clone", Family::RawThreads),
                (0x19f339, "the `pause` instruction", Family::Spins),
                (0x19f33b, "core::hint::spin_loop", Family::Spins),
                (0x1a2003, "the `syscall` instruction", Family::Syscalls),
            ]
        );
        assert!(sites[..6]
            .iter()
            .all(|s| s.function == "double::common::expected" && s.owner == Owner::Workspace));
        assert_eq!(sites[6].owner, Owner::Dependency("rustix".into()));
        assert_eq!(
            sites[6].function,
            "rustix::backend::arch::asm::syscall0_readonly"
        );
    }

    #[test]
    fn the_line_is_the_innermost_one_in_the_workspace() {
        let root = Path::new("/w");
        let text = "\
0x000000000019f30f
std::thread::spawn
/rustc/abc/library/std/src/thread/mod.rs:700
double::common::expected
/w/helper/tests/common/mod.rs:3 (discriminator 1)
0x000000000019f331
double::common::quiet
tests/common/mod.rs:9
0x000000000019f340
??
??:0
";
        let lines = parse_addr2line(text, root);
        assert_eq!(
            lines[&0x19f30f].line,
            Some((PathBuf::from("/w/helper/tests/common/mod.rs"), 3))
        );
        assert_eq!(
            lines[&0x19f30f].source,
            Some(PathBuf::from("/rustc/abc/library/std/src/thread/mod.rs"))
        );
        assert_eq!(
            lines[&0x19f30f].frames,
            [
                PathBuf::from("/rustc/abc/library/std/src/thread/mod.rs"),
                PathBuf::from("/w/helper/tests/common/mod.rs")
            ]
        );
        assert_eq!(
            lines[&0x19f331].line,
            Some((PathBuf::from("/w/tests/common/mod.rs"), 9))
        );
        assert_eq!(lines[&0x19f340], Located::default());
    }
}
