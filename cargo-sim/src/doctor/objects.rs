//! Reading what cargo built: the executables and libraries from cargo's
//! JSON messages, symbols with `nm`, calls with `objdump -r`, the
//! instructions outside the seed with `objdump -d`.

use super::known::Family;
use super::names::{instruction, watched};
use super::own::Sym;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `nm`, `objdump` and `addr2line`, checked before the build so a missing
/// one costs no time.
pub(super) struct Tools {
    pub(super) nm: String,
    pub(super) objdump: String,
    pub(super) addr2line: String,
}

impl Tools {
    pub(super) fn find() -> Result<Tools, String> {
        let pick = |var: &str, default: &str| -> Result<String, String> {
            let tool = std::env::var(var).unwrap_or_else(|_| default.to_string());
            match Command::new(&tool).arg("--version").output() {
                Ok(o) if o.status.success() => Ok(tool),
                Ok(o) => Err(format!(
                    "`{tool} --version` failed ({}); doctor reads symbols with GNU binutils' \
                     {default}: install binutils (e.g. `apt-get install binutils`) or set {var}",
                    o.status
                )),
                Err(e) => Err(format!(
                    "cannot run `{tool}` ({e}); doctor reads symbols with GNU binutils' \
                     {default}: install binutils (e.g. `apt-get install binutils`) or set {var}"
                )),
            }
        };
        Ok(Tools {
            nm: pick("NM", "nm")?,
            objdump: pick("OBJDUMP", "objdump")?,
            addr2line: pick("ADDR2LINE", "addr2line")?,
        })
    }
}

/// An executable cargo built that doctor judges: a test (of a library,
/// binary, integration test, bench or example), or an example.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Executable {
    pub(super) path: PathBuf,
    pub(super) package_id: String,
    pub(super) target: String,
    pub(super) kind: String,
}

/// What `cargo test --no-run --message-format=json` built.
#[derive(Debug, Default)]
pub(super) struct Artifacts {
    pub(super) executables: Vec<Executable>,
    /// Every compiled target: its package and crate name (the first
    /// segment of its functions' paths).
    pub(super) crates: Vec<(String, String)>,
    /// Each package's compiled libraries (a package built for the host and
    /// for the target has two).
    pub(super) libs: BTreeMap<String, Vec<PathBuf>>,
}

pub(super) fn parse_artifacts(stdout: &[u8]) -> Artifacts {
    let mut a = Artifacts::default();
    for line in stdout.split(|b| *b == b'\n') {
        // Every line cargo prints there is a JSON message; only
        // `compiler-artifact` ones say what was built.
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if v["reason"] != "compiler-artifact" {
            continue;
        }
        let id = v["package_id"].as_str().unwrap_or_default().to_string();
        let target = v["target"]["name"].as_str().unwrap_or_default();
        let kinds = v["target"]["kind"].as_array().cloned().unwrap_or_default();
        // A build script runs in the build, never in an executable.
        if !kinds.iter().any(|k| k == "custom-build") {
            a.crates.push((id.clone(), target.replace('-', "_")));
        }
        // Examples are built by `cargo test` as programs, not tests: they
        // are run with `cargo sim run --example`, so they are judged too.
        let judged = v["profile"]["test"] == true || kinds.iter().any(|k| k == "example");
        if let (Some(exe), true) = (v["executable"].as_str(), judged) {
            a.executables.push(Executable {
                path: PathBuf::from(exe),
                package_id: id.clone(),
                target: target.to_string(),
                kind: kinds
                    .first()
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            });
        }
        for f in v["filenames"].as_array().into_iter().flatten() {
            if let Some(f) = f.as_str().filter(|f| f.ends_with(".rlib")) {
                a.libs.entry(id.clone()).or_default().push(PathBuf::from(f));
            }
        }
    }
    a
}

/// An executable's defined symbols: what is linked into it.
pub(super) struct Symbols {
    pub(super) label: String,
    pub(super) defined: HashSet<String>,
    /// Raw name to demangled name, for what is printed.
    pub(super) demangled: HashMap<String, String>,
}

impl Symbols {
    /// The defined symbols of an executable read with `own::read_image`.
    pub(super) fn new(label: String, symbols: &[Sym]) -> Symbols {
        Symbols {
            label,
            defined: symbols.iter().map(|s| s.raw.clone()).collect(),
            demangled: symbols
                .iter()
                .map(|s| (s.raw.clone(), s.demangled.clone()))
                .collect(),
        }
    }
}

/// A function of a library that refers to a watched function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Call {
    /// The calling function's raw symbol; `None` when its object file keeps
    /// all its code in one `.text` section (native code built without
    /// function sections).
    pub(super) function: Option<String>,
    /// The watched function, demangled.
    pub(super) callee: String,
    pub(super) family: Family,
}

/// What a library's relocations say.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Code {
    pub(super) calls: Vec<Call>,
    /// Its functions (those with relocations): whether any of them is in a
    /// binary says whether the library is linked there.
    pub(super) functions: BTreeSet<String>,
}

/// The function a section holds, from its name (`-ffunction-sections`).
pub(super) fn function_of(section: &str) -> Option<&str> {
    [
        ".text.unlikely.",
        ".text.hot.",
        ".text.startup.",
        ".text.exit.",
        ".text.split.",
        ".text.",
    ]
    .iter()
    .find_map(|p| section.strip_prefix(p))
    .filter(|f| !f.is_empty())
}

/// Parses `objdump -r -C` output.
pub(super) fn parse_relocations(text: impl BufRead) -> std::io::Result<Code> {
    enum In {
        Function(String),
        PlainText,
        Other,
    }
    let mut code = Code::default();
    let mut seen: HashSet<(Option<String>, String)> = HashSet::new();
    let mut section = In::Other;
    for line in text.lines() {
        let line = line?;
        if let Some(rest) = line.strip_prefix("RELOCATION RECORDS FOR [") {
            let name = rest.strip_suffix("]:").unwrap_or(rest);
            section = match function_of(name) {
                Some(f) => {
                    code.functions.insert(f.to_string());
                    In::Function(f.to_string())
                }
                None if name == ".text" => In::PlainText,
                None => In::Other,
            };
            continue;
        }
        let function = match &section {
            In::Function(f) => Some(f.clone()),
            In::PlainText => None,
            In::Other => continue,
        };
        // `OFFSET TYPE VALUE`, the value possibly `name-0x4`.
        let mut parts = line.splitn(3, ' ').filter(|p| !p.is_empty());
        let (Some(offset), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !offset.bytes().all(|b| b.is_ascii_hexdigit()) || !kind.starts_with("R_") {
            continue;
        }
        let value = line
            .split_once(kind)
            .map(|(_, v)| v.trim())
            .unwrap_or_default();
        let value = strip_addend(value);
        if let Some(family) = watched(value) {
            if seen.insert((function.clone(), value.to_string())) {
                code.calls.push(Call {
                    function,
                    callee: value.to_string(),
                    family,
                });
            }
        }
    }
    Ok(code)
}

/// `name-0x0000000000000004` → `name`.
pub(super) fn strip_addend(v: &str) -> &str {
    match v.rfind(['-', '+']) {
        Some(i)
            if v[i + 1..].starts_with("0x")
                && v[i + 3..].bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            &v[..i]
        }
        _ => v,
    }
}

/// Runs `tool args path`, parsing its standard output as it comes (an
/// rlib's listing can be large), its standard error kept for the message.
/// An object it cannot read (LLVM bitcode, in LTO builds) would hide its
/// code: that is an error, never an empty answer.
pub(super) fn stream<T>(
    tool: &str,
    args: &[&str],
    path: &Path,
    parse: impl FnOnce(BufReader<std::process::ChildStdout>) -> std::io::Result<T>,
) -> Result<T, String> {
    let mut child = Command::new(tool)
        .args(args)
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {tool}: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // stderr on a thread of its own, so neither pipe can fill and block.
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let parsed = parse(BufReader::new(stdout));
    let status = child.wait().map_err(|e| format!("{tool}: {e}"))?;
    let errors = errors.join().unwrap_or_default();
    let parsed = parsed.map_err(|e| format!("reading {tool}'s output: {e}"))?;
    if !status.success() || errors.contains("not recognized") {
        return Err(format!(
            "{tool} {} could not read it ({status}): {}",
            args.join(" "),
            errors.trim()
        ));
    }
    Ok(parsed)
}

pub(super) fn read_code(objdump: &str, rlib: &Path) -> Result<Code, String> {
    stream(objdump, &["-r", "-C"], rlib, parse_relocations)
}

/// The instructions outside the seed in a library's functions, as calls
/// to the instruction.
pub(super) fn read_instructions(objdump: &str, rlib: &Path) -> Result<Vec<Call>, String> {
    stream(
        objdump,
        &["-d", "--no-show-raw-insn"],
        rlib,
        parse_instructions,
    )
}

/// An instruction line of `objdump -d` (`  4f:\trdtsc`): its address and
/// its text after the address.
pub(super) fn instruction_line(line: &str) -> Option<(u64, &str)> {
    let (address, rest) = line.split_once(":\t")?;
    let address = address.trim_start();
    if address.is_empty() || !address.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((u64::from_str_radix(address, 16).ok()?, rest))
}

/// An instruction's mnemonic, past objdump's prefixes.
pub(super) fn mnemonic(text: &str) -> &str {
    text.split_whitespace()
        .find(|w| {
            !matches!(
                *w,
                "notrack"
                    | "bnd"
                    | "lock"
                    | "rep"
                    | "repz"
                    | "repnz"
                    | "data16"
                    | "addr32"
                    | "cs"
                    | "ds"
            )
        })
        .unwrap_or("")
}

/// Parses `objdump -d --no-show-raw-insn` output: each function label
/// (`0000000000000000 <_ZN..E>:`) starts a function, and each instruction
/// in [`instruction`]'s list is a call to `` `rdtsc` instruction ``.
pub(super) fn parse_instructions(text: impl BufRead) -> std::io::Result<Vec<Call>> {
    let mut calls = Vec::new();
    let mut seen: HashSet<(Option<String>, String)> = HashSet::new();
    let mut function: Option<String> = None;
    for line in text.lines() {
        let line = line?;
        if let Some(label) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")) {
            function = Some(label.1.to_string());
            continue;
        }
        let Some((_, rest)) = instruction_line(&line) else {
            continue;
        };
        let m = mnemonic(rest);
        let Some(family) = instruction(m) else {
            continue;
        };
        let callee = format!("the `{m}` instruction");
        if seen.insert((function.clone(), callee.clone())) {
            calls.push(Call {
                function: function.clone(),
                callee,
                family,
            });
        }
    }
    Ok(calls)
}

/// `objdump -r` output for the tests here and in `judge`.
#[cfg(test)]
pub(super) const OBJDUMP: &str = "\
In archive libspawner-1.rlib:

spawner-1.spawner.0.rcgu.o:     file format elf64-x86-64

RELOCATION RECORDS FOR [.text._ZN7spawner11unused_exec17hE]:
OFFSET           TYPE              VALUE
000000000000000e R_X86_64_GOTPCREL  std::process::Command::spawn-0x0000000000000004
0000000000000019 R_X86_64_GOTPCREL  std::fs::File::open-0x0000000000000004
000000000000002b R_X86_64_GOTPCREL  core::result::Result<T,E>::is_ok-0x0000000000000004


RELOCATION RECORDS FOR [.text._ZN7spawner5start17hE]:
OFFSET           TYPE              VALUE
000000000000000b R_X86_64_GOTPCREL  std::thread::functions::spawn-0x0000000000000004
000000000000001b R_X86_64_PLT32    std::thread::functions::spawn-0x0000000000000004
0000000000000023 R_X86_64_PLT32    socket2::socket::Socket::new-0x0000000000000004
0000000000000031 R_X86_64_PLT32    clone-0x0000000000000004


RELOCATION RECORDS FOR [.text._ZN7spawner4pure17hE]:
OFFSET           TYPE              VALUE
0000000000000003 R_X86_64_PC32     .rodata..Lanon.1.0-0x0000000000000004


RELOCATION RECORDS FOR [.debug_info]:
OFFSET           TYPE              VALUE
0000000000000008 R_X86_64_64       std::fs::File::open

RELOCATION RECORDS FOR [.text]:
OFFSET           TYPE              VALUE
0000000000000010 R_X86_64_PLT32    pthread_create-0x0000000000000004
0000000000000018 R_X86_64_PLT32    pthread_mutex_lock-0x0000000000000004
0000000000000020 R_X86_64_PLT32    clone3-0x0000000000000004
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relocations_name_the_calling_function_and_skip_non_code() {
        let code = parse_relocations(OBJDUMP.as_bytes()).unwrap();
        assert_eq!(
            code.calls,
            vec![
                Call {
                    function: Some("_ZN7spawner11unused_exec17hE".into()),
                    callee: "std::process::Command::spawn".into(),
                    family: Family::Processes,
                },
                // std::thread::spawn, pthread_create and the pthread locks
                // are simulated; a thread made with clone itself is not.
                Call {
                    function: Some("_ZN7spawner5start17hE".into()),
                    callee: "clone".into(),
                    family: Family::RawThreads,
                },
                Call {
                    function: None,
                    callee: "clone3".into(),
                    family: Family::RawThreads,
                },
            ]
        );
        let functions: Vec<&str> = code.functions.iter().map(String::as_str).collect();
        assert_eq!(
            functions,
            [
                "_ZN7spawner11unused_exec17hE",
                "_ZN7spawner4pure17hE",
                "_ZN7spawner5start17hE"
            ]
        );
    }

    #[test]
    fn instructions_outside_the_seed_are_found_per_function() {
        let listing = "\
In archive libraw-1.rlib:

raw-1.raw.0.rcgu.o:     file format elf64-x86-64


Disassembly of section .text._ZN3raw7syscall17hE:

0000000000000000 <_ZN3raw7syscall17hE>:
   0:\tmov    %rdi,%rax
   3:\tsyscall
   5:\tsyscall
   7:\tret

Disassembly of section .text._ZN3raw5ticks17hE:

0000000000000000 <_ZN3raw5ticks17hE>:
   0:\trdtsc
   2:\tshl    $0x20,%rdx
   6:\tpause
   8:\tret
";
        let calls = parse_instructions(listing.as_bytes()).unwrap();
        assert_eq!(
            calls,
            vec![
                Call {
                    function: Some("_ZN3raw7syscall17hE".into()),
                    callee: "the `syscall` instruction".into(),
                    family: Family::Syscalls,
                },
                Call {
                    function: Some("_ZN3raw5ticks17hE".into()),
                    callee: "the `rdtsc` instruction".into(),
                    family: Family::Tsc,
                },
            ]
        );
        assert_eq!(mnemonic("notrack call   *%rax"), "call");
        assert_eq!(
            instruction_line("  19f30f:\tcall   192a50 <_ZN3std6thread5spawn17hE>"),
            Some((0x19f30f, "call   192a50 <_ZN3std6thread5spawn17hE>"))
        );
        assert_eq!(
            instruction_line("0000000000000000 <_ZN3raw5ticks17hE>:"),
            None
        );
    }

    #[test]
    fn artifacts_give_test_executables_examples_crates_and_libraries() {
        let out = br#"{"reason":"compiler-artifact","package_id":"path+file:///s#0.1.0","target":{"kind":["test"],"name":"t"},"profile":{"test":true},"filenames":["/d/t-1"],"executable":"/d/t-1","fresh":true}
{"reason":"compiler-artifact","package_id":"registry+x#spawner@0.3.0","target":{"kind":["custom-build"],"name":"build-script-build"},"profile":{"test":false},"filenames":["/d/build-script-build"],"executable":null,"fresh":false}
{"reason":"compiler-artifact","package_id":"registry+x#spawner@0.3.0","target":{"kind":["lib"],"name":"spawner"},"profile":{"test":false},"filenames":["/d/libspawner-1.rlib","/d/libspawner-1.rmeta"],"executable":null,"fresh":false}
{"reason":"compiler-artifact","package_id":"path+file:///s#0.1.0","target":{"kind":["bin"],"name":"s"},"profile":{"test":false},"filenames":["/d/s"],"executable":"/d/s","fresh":false}
{"reason":"compiler-artifact","package_id":"path+file:///s#0.1.0","target":{"kind":["example"],"name":"demo-one"},"profile":{"test":false},"filenames":["/d/demo-one"],"executable":"/d/demo-one","fresh":false}
{"reason":"build-finished","success":true}
not json
"#;
        let a = parse_artifacts(out);
        // The production binary is not judged: only tests and examples.
        assert_eq!(
            a.executables,
            vec![
                Executable {
                    path: PathBuf::from("/d/t-1"),
                    package_id: "path+file:///s#0.1.0".into(),
                    target: "t".into(),
                    kind: "test".into(),
                },
                Executable {
                    path: PathBuf::from("/d/demo-one"),
                    package_id: "path+file:///s#0.1.0".into(),
                    target: "demo-one".into(),
                    kind: "example".into(),
                }
            ]
        );
        let crates: Vec<&str> = a.crates.iter().map(|(_, c)| c.as_str()).collect();
        assert_eq!(crates, ["t", "spawner", "s", "demo_one"]);
        assert_eq!(
            a.libs["registry+x#spawner@0.3.0"],
            vec![PathBuf::from("/d/libspawner-1.rlib")]
        );
        assert_eq!(a.libs.len(), 1);
    }
}
