//! The workspace's own code, read where it ends up: in the executables.
//!
//! A test target's code (an integration test, its `mod common;` helpers, a
//! library's unit tests, an example) is compiled straight into its
//! executable, with no library whose relocations could be read. So its
//! functions are found in the executable's symbol table (`nm`: those whose
//! path starts with a crate of the workspace), only they are disassembled
//! (`objdump -d`, one range per run of them, which keeps it to a few small
//! ranges in a large binary), and each reference to a watched function is
//! looked up: a direct call or jump names its target; a call through the
//! GOT (how Rust reaches another crate's function) names a slot, which the
//! dynamic relocations (`objdump -R`) resolve to a function or an import.
//! A `syscall`, `rdtsc` or `rdrand` instruction there counts as itself.
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

use super::known::{instruction, owners, watched, Family};
use super::objects::{instruction_line, mnemonic, Tools};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A place in the workspace's own code that reaches something outside the
/// seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Site {
    /// The function it is in, demangled.
    pub(super) function: String,
    /// The watched function it calls, or the instruction.
    pub(super) callee: String,
    pub(super) family: Family,
    pub(super) address: u64,
    /// The file and line the debug information gives for it.
    pub(super) line: Option<(PathBuf, u32)>,
}

/// A function symbol of an executable.
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

/// The workspace's functions in an executable, the watched ones and the
/// GOT, as read from its symbol table and dynamic relocations.
pub(super) struct Image {
    /// Every function symbol, by address.
    pub(super) functions: Vec<Symbol>,
    /// Which of them are the workspace's.
    pub(super) own: Vec<bool>,
    pub(super) watched: BTreeMap<u64, (String, Family)>,
    pub(super) slots: BTreeMap<u64, Slot>,
}

impl Image {
    pub(super) fn new(
        symbols: Vec<(u64, Option<u64>, char, String)>,
        slots: BTreeMap<u64, Slot>,
        crates: &BTreeSet<String>,
    ) -> Image {
        let mut functions: Vec<Symbol> = symbols
            .into_iter()
            .filter(|(_, _, kind, _)| matches!(kind, 't' | 'T' | 'w' | 'W'))
            .map(|(address, size, _, demangled)| Symbol {
                address,
                size,
                demangled,
            })
            .collect();
        functions.sort_by(|a, b| (a.address, &a.demangled).cmp(&(b.address, &b.demangled)));
        let own = functions
            .iter()
            .map(|f| owners(&f.demangled).iter().any(|o| crates.contains(o)))
            .collect();
        let watched = functions
            .iter()
            .filter_map(|f| Some((f.address, (f.demangled.clone(), watched(&f.demangled)?))))
            .collect();
        Image {
            functions,
            own,
            watched,
            slots,
        }
    }

    /// The address ranges to disassemble: each maximal run of the
    /// workspace's functions in address order.
    pub(super) fn runs(&self) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut open: Option<(u64, u64)> = None;
        for (i, f) in self.functions.iter().enumerate() {
            let next = self.functions.get(i + 1).map(|n| n.address);
            let end = f.size.map(|s| f.address + s).or(next).unwrap_or(f.address);
            match (self.own[i], open) {
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

    /// The workspace's function that holds `address`, if any. Functions do
    /// not nest: only the symbols at the nearest start at or below it can
    /// hold it (one function may have several names).
    pub(super) fn own_function_at(&self, address: u64) -> Option<&str> {
        let i = self.functions.partition_point(|f| f.address <= address);
        let start = self.functions.get(i.checked_sub(1)?)?.address;
        let first = self.functions.partition_point(|f| f.address < start);
        (first..i)
            .filter(|&j| self.own[j])
            .map(|j| &self.functions[j])
            .find(|f| f.size.is_none_or(|s| address < f.address + s))
            .map(|f| f.demangled.as_str())
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
    pub(super) fn sites(&self, listing: &str) -> Vec<Site> {
        let mut out: Vec<Site> = Vec::new();
        for line in listing.lines() {
            let Some((address, text)) = instruction_line(line) else {
                continue;
            };
            let Some(function) = self.own_function_at(address) else {
                continue;
            };
            let m = mnemonic(text);
            let mut found: Vec<(String, Family)> = Vec::new();
            if let Some(family) = instruction(m) {
                found.push((format!("the `{m}` instruction"), family));
            }
            found.extend(referenced(text).into_iter().filter_map(|a| self.target(a)));
            for (callee, family) in found {
                if !out
                    .iter()
                    .any(|s| s.address == address && s.callee == callee)
                {
                    out.push(Site {
                        function: function.to_string(),
                        callee,
                        family,
                        address,
                        line: None,
                    });
                }
            }
        }
        out
    }
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

/// The places in the workspace's own code (`crates`: its crate names) in
/// one executable that reach something outside the seed, each with its
/// line when the debug information has one (`root`: the workspace's
/// folder, whose sources are preferred among inlined frames).
pub(super) fn own_sites(
    tools: &Tools,
    exe: &Path,
    crates: &BTreeSet<String>,
    root: &Path,
) -> Result<Vec<Site>, String> {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let symbols = parse_nm_sized(&output(
        &tools.nm,
        &args(&["-p", "-S", "-C", "--defined-only"]),
        exe,
    )?);
    if symbols.is_empty() {
        return Err(
            "it has no symbol table (stripped? set `strip = false` for the test profile)".into(),
        );
    }
    // A static executable has no dynamic relocations: its calls are direct.
    let slots = output(&tools.objdump, &args(&["-R"]), exe)
        .map(|t| parse_dynamic_relocations(&t))
        .unwrap_or_default();
    let image = Image::new(symbols, slots, crates);
    let mut sites = Vec::new();
    for (start, stop) in image.runs() {
        let listing = output(
            &tools.objdump,
            &[
                "-d".to_string(),
                "--no-show-raw-insn".to_string(),
                format!("--start-address=0x{start:x}"),
                format!("--stop-address=0x{stop:x}"),
            ],
            exe,
        )?;
        sites.extend(image.sites(&listing));
    }
    if !sites.is_empty() {
        let addresses: Vec<String> = sites.iter().map(|s| format!("0x{:x}", s.address)).collect();
        let mut a = args(&["-a", "-f", "-i", "-C", "-e"]);
        a.push(exe.display().to_string());
        a.extend(addresses);
        let out = Command::new(&tools.addr2line)
            .args(&a)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", tools.addr2line))?;
        let lines = parse_addr2line(&String::from_utf8_lossy(&out.stdout), root);
        for s in &mut sites {
            s.line = lines.get(&s.address).cloned().flatten();
        }
    }
    Ok(sites)
}

/// `addr2line -a -f -i` output: per address, its inlined frames innermost
/// first; the line kept is the innermost frame's under `root`, else the
/// innermost one that has a line.
pub(super) fn parse_addr2line(text: &str, root: &Path) -> BTreeMap<u64, Option<(PathBuf, u32)>> {
    let mut out: BTreeMap<u64, Option<(PathBuf, u32)>> = BTreeMap::new();
    let mut frames: Vec<(PathBuf, u32)> = Vec::new();
    let mut current: Option<u64> = None;
    let mut finish = |at: Option<u64>, frames: &mut Vec<(PathBuf, u32)>| {
        if let Some(a) = at {
            let pick = frames
                .iter()
                .find(|(p, _)| p.starts_with(root))
                .or(frames.first())
                .cloned();
            out.insert(a, pick);
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
    use super::*;

    const NM: &str = "\
0000000000192a50 000000000000004a t std::thread::functions::spawn
0000000000199070 0000000000000020 t std::thread::join_handle::JoinHandle<T>::join
000000000019f300 00000000000000b6 t double::common::expected
000000000019f3c0 0000000000000030 t double::common::quiet
000000000019f400 0000000000000010 t core::ptr::drop_in_place<u32>
000000000019f880 0000000000000015 t double::main
00000000001a17f0 000000000000000e T helper::double
0000000000648030 T _Unwind_Resume@plt
0000000000200000 0000000000000010 T fork
";

    fn image() -> Image {
        let crates: BTreeSet<String> = ["double", "helper"].iter().map(|s| s.to_string()).collect();
        let slots = parse_dynamic_relocations(
            "0000000000d15ac8 R_X86_64_RELATIVE  *ABS*+0x0000000000192a50\n\
             0000000000d15ad0 R_X86_64_GLOB_DAT  posix_spawnp@GLIBC_2.2.5\n\
             0000000000d15ad8 R_X86_64_RELATIVE  *ABS*+0x0000000000199070\n",
        );
        Image::new(parse_nm_sized(NM), slots, &crates)
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
        assert_eq!(s[7], (0x648030, None, 'T', "_Unwind_Resume@plt".into()));
    }

    #[test]
    fn runs_cover_the_workspace_functions_only() {
        let image = image();
        assert_eq!(
            image.runs(),
            // `double::main` and `helper::double` have no one else's symbol
            // between them: one run, whose gap is no one's function.
            [(0x19f300, 0x19f3f0), (0x19f880, 0x1a17fe)]
        );
        assert_eq!(
            image.own_function_at(0x19f30f),
            Some("double::common::expected")
        );
        assert_eq!(image.own_function_at(0x19f3f8), None, "a gap is no one's");
        assert_eq!(image.own_function_at(0x192a60), None, "std's");
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

000000000019f3c0 <_ZN6double6common5quiet17hE>:
  19f3c0:\tcall   *0xb6712(%rip)        # d15ad8 <_DYNAMIC+0x458>
  19f3c6:\tret
";
        let sites = image().sites(listing);
        let got: Vec<(u64, &str, Family)> = sites
            .iter()
            .map(|s| (s.address, s.callee.as_str(), s.family))
            .collect();
        assert_eq!(
            got,
            [
                (0x19f30f, "std::thread::functions::spawn", Family::Threads),
                (0x19f320, "std::thread::functions::spawn", Family::Threads),
                (0x19f326, "posix_spawnp", Family::Processes),
                (0x19f32f, "the `rdtsc` instruction", Family::Tsc),
                (0x19f331, "fork", Family::Processes),
            ]
        );
        assert!(sites
            .iter()
            .all(|s| s.function == "double::common::expected"));
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
            lines[&0x19f30f],
            Some((PathBuf::from("/w/helper/tests/common/mod.rs"), 3))
        );
        assert_eq!(
            lines[&0x19f331],
            Some((PathBuf::from("/w/tests/common/mod.rs"), 9))
        );
        assert_eq!(lines[&0x19f340], None);
    }
}
