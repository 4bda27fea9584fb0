//! The rule applied to what was read, and the report it gives.

use super::known::{known, spinner, Family, Shown};
use super::objects::{Code, Symbols};
use super::own::{Owner, Site};
use crate::graph::Package;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One library of the graph outside the workspace, with what was read
/// about it.
pub(super) struct Examined {
    pub(super) package: Package,
    /// Its library's crate name (the first segment of its functions'
    /// paths), for its code instantiated in an executable.
    pub(super) crate_name: String,
    /// Its compiled code (relocations, and instructions where its source
    /// hints at them), or why it could not be read.
    pub(super) code: Result<Code, String>,
    /// Why its source could not be searched for instruction hints.
    pub(super) source_error: Option<String>,
}

/// What was read in one executable's own code: the workspace's, and the
/// dependencies' generic or inline functions instantiated there.
pub(super) struct Placed {
    /// The executable, as printed (`helper test `double``).
    pub(super) label: String,
    /// The workspace package it belongs to.
    pub(super) package: String,
    pub(super) sites: Vec<Site>,
}

/// One blocker: a place that reaches something outside the seed.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Finding {
    /// The crate and version, or the workspace package and the file and
    /// line (or function) in it.
    pub(super) who: String,
    pub(super) what: String,
    pub(super) evidence: Vec<String>,
    pub(super) advice: String,
}

#[derive(Debug, Default)]
pub(super) struct Report {
    pub(super) findings: Vec<Finding>,
    pub(super) notes: Vec<String>,
    pub(super) unknown: Vec<String>,
    pub(super) executables: usize,
    pub(super) crates: usize,
}

/// Exit codes: what a script can branch on.
pub(super) const EXIT_CLEAN: u8 = 0;
pub(super) const EXIT_BLOCKERS: u8 = 1;
pub(super) const EXIT_UNREAD: u8 = 3;

impl Report {
    /// 0 with nothing but notes, 1 with a blocker, 3 when nothing blocks
    /// but something could not be read (never called clean).
    pub(super) fn exit_code(&self) -> u8 {
        if !self.findings.is_empty() {
            EXIT_BLOCKERS
        } else if !self.unknown.is_empty() {
            EXIT_UNREAD
        } else {
            EXIT_CLEAN
        }
    }

    pub(super) fn render(&self) -> String {
        let mut s = String::new();
        for f in &self.findings {
            s += &format!("blocker: {}: {}\n", f.who, f.evidence.join("; "));
            s += &format!("    why: {}\n", f.what);
            s += &format!("    do:  {}\n", f.advice);
        }
        for u in &self.unknown {
            s += &format!("unread: {u}\n");
        }
        for n in &self.notes {
            s += &format!("note: {n}\n");
        }
        let checked = format!(
            "{} executable{} of the workspace (its own code read in each), {} crate{} outside \
             the workspace and the simulator",
            self.executables,
            if self.executables == 1 { "" } else { "s" },
            self.crates,
            if self.crates == 1 { "" } else { "s" }
        );
        let n = self.findings.len();
        match self.exit_code() {
            EXIT_CLEAN => {
                s += &format!("checked: {checked}\n");
                s += "cargo sim doctor: nothing here reaches outside the seed that doctor knows \
                      of\n";
            }
            EXIT_BLOCKERS => {
                let unread = match self.unknown.len() {
                    0 => String::new(),
                    u => format!("; {u} thing(s) could not be read"),
                };
                s += &format!(
                    "cargo sim doctor: {n} blocker{} ({checked}{unread}); each says what to do\n",
                    if n == 1 { "" } else { "s" }
                );
            }
            _ => {
                s += &format!(
                    "cargo sim doctor: no blocker found, but {} thing(s) could not be read, so \
                     this is not a clean bill ({checked})\n",
                    self.unknown.len()
                );
            }
        }
        s
    }
}

/// " (and 2 more executables)" after the first of `all`.
fn more(all: &BTreeSet<String>) -> String {
    match all.len() {
        0 | 1 => String::new(),
        2 => " (and 1 more executable)".to_string(),
        n => format!(" (and {} more executables)", n - 1),
    }
}

/// What a place does to what it names: an instruction is executed, a
/// function called.
fn verb(callee: &str) -> &'static str {
    if callee.starts_with("the `") {
        "executes"
    } else {
        "calls"
    }
}

/// The workspace's own places, one finding per place and family (a helper
/// compiled into several executables is one finding).
pub(super) fn judge_own(own: &[Placed], root: &Path) -> (Vec<Finding>, Vec<String>) {
    type Key = (String, Family);
    // Place → (function, callee, every executable it is in).
    let mut places: BTreeMap<Key, (String, String, BTreeSet<String>)> = BTreeMap::new();
    let mut lineless = BTreeSet::new();
    for code in own {
        let own = |s: &&Site| s.owner == Owner::Workspace && s.family != Family::Spins;
        for site in code.sites.iter().filter(own) {
            let place = match &site.line {
                Some((file, line)) => {
                    let shown = file.strip_prefix(root).unwrap_or(file);
                    format!("{}:{line}", shown.display())
                }
                None => {
                    lineless.insert(code.label.clone());
                    format!("{}, in `{}`", code.package, site.function)
                }
            };
            let entry = places
                .entry((place, site.family))
                .or_insert_with(|| (site.function.clone(), site.callee.clone(), BTreeSet::new()));
            entry.2.insert(code.label.clone());
        }
    }
    let findings = places
        .into_iter()
        .map(|((place, family), (function, callee, all))| {
            let first = all.iter().next().cloned().unwrap_or_default();
            Finding {
                who: place,
                evidence: vec![format!(
                    "`{function}` {} {callee}, linked into {first}{}",
                    verb(&callee),
                    more(&all)
                )],
                what: format!("it {}", family.what()),
                advice: family.advice().to_string(),
            }
        })
        .collect();
    let notes = lineless
        .into_iter()
        .map(|label| {
            format!(
                "{label} has no line information, so its places are named by function: build the \
                 tests with debug information (`[profile.test] debug = \"line-tables-only\"` or \
                 more)"
            )
        })
        .collect();
    (findings, notes)
}

/// Takes every candidate spin wait out of `placed` (own.rs finds each
/// `pause`), and keeps as a note, one per crate, those whose inlined frames
/// are in the source of a crate known to wait by spinning alone
/// (`known::SPINNERS`; `packages` are the graph's packages outside the
/// workspace). The rest are the brief spins of locks that then park or
/// yield, and say nothing.
pub(super) fn judge_spins(
    placed: &mut [Placed],
    packages: &[&Package],
    root: &Path,
) -> Vec<String> {
    let spinners: Vec<&Package> = packages
        .iter()
        .copied()
        .filter(|p| spinner(&p.name).is_some())
        .collect();
    // (first place, every executable, every address).
    type Spun = (String, BTreeSet<String>, BTreeSet<u64>);
    // By package (name, version).
    let mut found: BTreeMap<(String, String), Spun> = BTreeMap::new();
    for code in placed.iter_mut() {
        let (spins, rest): (Vec<Site>, Vec<Site>) = std::mem::take(&mut code.sites)
            .into_iter()
            .partition(|s| s.family == Family::Spins);
        code.sites = rest;
        for site in spins {
            let Some(p) = spinners
                .iter()
                .find(|p| site.frames.iter().any(|f| f.starts_with(&p.dir)))
            else {
                continue;
            };
            let place = match (&site.owner, &site.line) {
                (Owner::Workspace, Some((file, line))) => {
                    let shown = file.strip_prefix(root).unwrap_or(file);
                    format!("{}:{line} in `{}`", shown.display(), site.function)
                }
                _ => format!("`{}`", site.function),
            };
            let entry = found
                .entry((p.name.clone(), p.version.clone()))
                .or_insert_with(|| (place, BTreeSet::new(), BTreeSet::new()));
            entry.1.insert(code.label.clone());
            entry.2.insert(site.address);
        }
    }
    found
        .into_iter()
        .map(|((name, version), (place, all, addresses))| {
            let how = spinner(&name).map(|s| s.how).unwrap_or_default();
            let first = all.iter().next().cloned().unwrap_or_default();
            let places = match addresses.len() {
                1 => String::new(),
                n => format!(" ({n} spinning places in all)"),
            };
            format!(
                "{name} {version} waits by spinning, at {place}, linked into {first}{}{places}: \
                 {how} {}. Where a holder can be parked, {}",
                more(&all),
                Family::Spins.what(),
                Family::Spins.advice()
            )
        })
        .collect()
}

/// Applies the rule (see the module's comment) to the libraries outside
/// the workspace: their linked functions' calls (`binaries` says what is
/// linked), and their code instantiated in the executables (`placed`).
pub(super) fn judge(examined: &[Examined], binaries: &[Symbols], placed: &[Placed]) -> Report {
    let mut report = Report {
        crates: examined.len(),
        ..Report::default()
    };
    for e in examined {
        let p = &e.package;
        let code = match &e.code {
            Ok(c) => c,
            Err(err) => {
                report.unknown.push(format!(
                    "{} {}: cannot read its code: {err}",
                    p.name, p.version
                ));
                continue;
            }
        };
        if let Some(err) = &e.source_error {
            report.notes.push(format!(
                "{} {}: its source could not be searched ({err}), so its instructions were not \
                 read: a raw system call or TSC read of its own would go unseen",
                p.name, p.version
            ));
        }
        let own = format!("{}::", p.name.replace('-', "_"));
        // Where any of its code is linked.
        let linked_in: Vec<&Symbols> = binaries
            .iter()
            .filter(|b| code.functions.iter().any(|f| b.defined.contains(f)))
            .collect();
        // Family → (caller, callee, every executable it is linked into).
        type Linked = (String, String, BTreeSet<String>);
        let mut linked: BTreeMap<Family, Linked> = BTreeMap::new();
        for call in &code.calls {
            for b in binaries {
                let here = match &call.function {
                    Some(f) => b.defined.contains(f),
                    None => linked_in.iter().any(|l| std::ptr::eq(*l, b)),
                };
                if !here {
                    continue;
                }
                let caller = match &call.function {
                    Some(f) => b.demangled.get(f).cloned().unwrap_or_else(|| f.clone()),
                    None => format!("{}'s native code", p.name),
                };
                let entry = linked
                    .entry(call.family)
                    .or_insert_with(|| (caller.clone(), call.callee.clone(), BTreeSet::new()));
                entry.2.insert(b.label.clone());
                // A caller of the crate's own name says more than a std
                // generic instantiated in it.
                if !entry.0.contains(&own) && caller.contains(&own) {
                    entry.0 = caller;
                    entry.1 = call.callee.clone();
                }
            }
        }
        let mine = Owner::Dependency(e.crate_name.clone());
        // Two versions of a crate share its name: then the site's source
        // file says whose it is.
        let alone = examined
            .iter()
            .filter(|o| o.crate_name == e.crate_name)
            .count()
            == 1;
        let ours = |s: &&Site| {
            s.owner == mine
                && s.family != Family::Spins
                && (alone || s.source.as_ref().is_some_and(|f| f.starts_with(&p.dir)))
        };
        for placed in placed {
            for site in placed.sites.iter().filter(ours) {
                let entry = linked.entry(site.family).or_insert_with(|| {
                    (site.function.clone(), site.callee.clone(), BTreeSet::new())
                });
                entry.2.insert(placed.label.clone());
            }
        }
        let mut evidence: Vec<String> = linked
            .iter()
            .map(|(_, (caller, callee, all))| {
                let first = all.iter().next().cloned().unwrap_or_default();
                format!(
                    "`{caller}` {} {callee}, linked into {first}{}",
                    verb(callee),
                    more(all)
                )
            })
            .collect();
        let mut families: Vec<Family> = linked.keys().copied().collect();
        let k = known(&p.name);
        match k.map(|k| k.shown) {
            Some(Shown::Linked(f)) if !families.contains(&f) => {
                if let Some(b) = linked_in.first() {
                    families.push(f);
                    evidence.push(format!(
                        "a known case ({}), and its code is linked into {}",
                        f.name(),
                        b.label
                    ));
                }
            }
            // Native code built without function sections (or linked from
            // a system library) leaves nothing to tell by: built in is
            // enough.
            Some(Shown::Native(f)) if !families.contains(&f) => {
                let built = match linked_in.first() {
                    Some(b) => Some(format!("known native code, linked into {}", b.label)),
                    None if code.functions.is_empty() => {
                        Some("known native code, built into the tests".to_string())
                    }
                    None => None,
                };
                if let Some(b) = built {
                    families.push(f);
                    evidence.push(b);
                }
            }
            _ => {}
        }
        if families.is_empty() {
            continue;
        }
        if let Some(k) = k.filter(|k| k.shown == Shown::Served) {
            report
                .notes
                .push(format!("{} {} {}", p.name, p.version, k.what));
            continue;
        }
        if let Some(k) = k.filter(|k| k.shown == Shown::OnRequest) {
            report.notes.push(format!(
                "{} {} {} ({})",
                p.name,
                p.version,
                k.what,
                evidence.join("; ")
            ));
            continue;
        }
        let (what, advice) = match k {
            Some(k) => (k.what.to_string(), k.advice.to_string()),
            None => (
                families
                    .iter()
                    .map(|f| format!("it {}", f.what()))
                    .collect::<Vec<_>>()
                    .join("; "),
                families
                    .iter()
                    .map(|f| f.advice())
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        };
        report.findings.push(Finding {
            who: format!("{} {}", p.name, p.version),
            what,
            evidence,
            advice,
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::super::objects::{parse_instructions, parse_relocations, OBJDUMP};
    use super::*;
    use std::path::PathBuf;

    fn package(name: &str) -> Package {
        Package {
            id: format!("{name}-id"),
            name: name.into(),
            version: "1.0.0".into(),
            dir: PathBuf::from("/nowhere"),
        }
    }

    fn binary(defined: &[&str]) -> Symbols {
        Symbols {
            label: "app test `t`".into(),
            defined: defined.iter().map(|s| s.to_string()).collect(),
            demangled: defined
                .iter()
                .map(|s| (s.to_string(), format!("demangled({s})")))
                .collect(),
        }
    }

    fn examined(name: &str, code: &str) -> Examined {
        Examined {
            package: package(name),
            crate_name: name.replace('-', "_"),
            code: Ok(parse_relocations(code.as_bytes()).unwrap()),
            source_error: None,
        }
    }

    #[test]
    fn a_crate_blocks_only_through_its_own_linked_calls() {
        let spawner = examined("spawner", OBJDUMP);
        // `start` is linked (a std thread, which is simulated, a thread made
        // with clone, which is not, and socket2's `Socket::new`, which the
        // interposers serve), `unused_exec` is not.
        let mut report = judge(
            std::slice::from_ref(&spawner),
            &[binary(&["_ZN7spawner5start17hE"])],
            &[],
        );
        report.executables = 1;
        assert_eq!(report.findings.len(), 1, "{report:?}");
        let f = &report.findings[0];
        assert_eq!(f.who, "spawner 1.0.0");
        assert_eq!(f.what, format!("it {}", Family::RawThreads.what()));
        assert_eq!(
            f.evidence,
            ["`demangled(_ZN7spawner5start17hE)` calls clone, linked into app test `t`"],
        );
        let text = report.render();
        assert!(
            text.starts_with("blocker: spawner 1.0.0: `demangled("),
            "{text}"
        );
        assert!(
            text.contains("\n    why: it makes a thread without pthread_create"),
            "{text}"
        );
        assert!(text.contains("runs outside the simulation"), "{text}");
        assert!(
            text.contains("\n    do:  start the thread with std::thread or pthread_create"),
            "{text}"
        );
        assert!(text.ends_with("1 blocker (1 executable of the workspace (its own code read in each), 1 crate outside the workspace and the simulator); each says what to do\n"), "{text}");
        assert_eq!(report.exit_code(), EXIT_BLOCKERS);
        // Nothing of it linked: nothing said, and a clean exit.
        let report = judge(&[spawner], &[binary(&["_ZN5other1f17hE"])], &[]);
        assert_eq!(report.exit_code(), EXIT_CLEAN, "{report:?}");
        assert!(report.notes.is_empty(), "{report:?}");
        assert!(report
            .render()
            .ends_with("nothing here reaches outside the seed that doctor knows of\n"));
    }

    /// AWS-LC's jitter entropy executes `rdtsc`, but inside a simulation
    /// its entropy source is the seed's: a note, not a blocker.
    #[test]
    fn a_served_crates_escaping_code_is_a_note_not_a_blocker() {
        let jitter = "\
0000000000000000 <jent_get_nstime>:
   0:\trdtsc
";
        let mut aws = examined("aws-lc-sys", "");
        if let Ok(code) = &mut aws.code {
            code.calls = parse_instructions(jitter.as_bytes()).unwrap();
            code.functions.insert("jent_get_nstime".into());
        }
        let report = judge(&[aws], &[binary(&["jent_get_nstime"])], &[]);
        assert!(report.findings.is_empty(), "{report:?}");
        assert_eq!(report.exit_code(), EXIT_CLEAN, "{report:?}");
        assert_eq!(report.notes.len(), 1, "{report:?}");
        assert!(
            report.notes[0].starts_with("aws-lc-sys 1.0.0 has CPU-jitter entropy"),
            "{report:?}"
        );
    }

    #[test]
    fn instructions_known_readers_and_native_code_count_when_linked() {
        let ticks = "\
0000000000000000 <_ZN5ticks3now17hE>:
   0:\trdtsc
";
        let mut by_instruction = examined("ticks", "");
        if let Ok(code) = &mut by_instruction.code {
            code.calls = parse_instructions(ticks.as_bytes()).unwrap();
            code.functions.insert("_ZN5ticks3now17hE".into());
        }
        let quanta_code = "RELOCATION RECORDS FOR [.text._ZN6quanta3now17hE]:\n\
                           0000000000000003 R_X86_64_PC32     .rodata..Lanon.1.0-0x4\n";
        let quanta = examined("quanta", quanta_code);
        let openssl = examined("openssl-sys", "");
        // RocksDB's C++ starts threads and waits on pthread locks: its
        // threads are simulated, so it is no longer a known case.
        let rocks = examined("librocksdb-sys", "");
        let linked = binary(&["_ZN6quanta3now17hE", "_ZN5ticks3now17hE"]);
        let report = judge(&[by_instruction, quanta, openssl, rocks], &[linked], &[]);
        let who: Vec<&str> = report.findings.iter().map(|f| f.who.as_str()).collect();
        assert_eq!(
            who,
            ["ticks 1.0.0", "quanta 1.0.0", "openssl-sys 1.0.0"],
            "{report:?}"
        );
        assert_eq!(
            report.findings[0].evidence,
            ["`demangled(_ZN5ticks3now17hE)` executes the `rdtsc` instruction, linked into app test \
              `t`"]
        );
        assert_eq!(
            report.findings[0].what,
            format!("it {}", Family::Tsc.what())
        );
        assert!(report.findings[1].evidence[0].contains("a known case (the timestamp counter)"));
        assert_eq!(
            report.findings[2].evidence,
            ["known native code, built into the tests"]
        );
        // Their code built but none of it linked: nothing can run, nothing
        // counts.
        let openssl = "RELOCATION RECORDS FOR [.text.RAND_bytes]:\n\
                       0000000000000003 R_X86_64_PLT32    open64-0x4\n";
        let mut unlinked = vec![
            examined("quanta", quanta_code),
            examined("openssl-sys", openssl),
        ];
        unlinked[0].source_error = Some("/r/quanta: not found".into());
        let report = judge(&unlinked, &[binary(&["_ZN5other1f17hE"])], &[]);
        assert_eq!(report.exit_code(), EXIT_CLEAN, "{report:?}");
        assert_eq!(report.notes.len(), 1, "{report:?}");
        assert!(
            report.notes[0].contains("could not be searched"),
            "{report:?}"
        );
    }

    #[test]
    fn a_dependencys_code_instantiated_in_an_executable_is_its_own() {
        // rustix 0.38's inline `syscall` wrapper, instantiated in the test
        // crate; rustix 1 (libc backend) shares the crate's name.
        let mut old = examined("rustix", "");
        old.package.version = "0.38.44".into();
        old.package.dir = PathBuf::from("/r/rustix-0.38.44");
        let mut new = examined("rustix", "");
        new.package.dir = PathBuf::from("/r/rustix-1.0.0");
        let placed = Placed {
            label: "misc test `raw`".into(),
            package: "misc".into(),
            sites: vec![Site {
                owner: Owner::Dependency("rustix".into()),
                function: "rustix::backend::arch::asm::syscall0_readonly".into(),
                callee: "the `syscall` instruction".into(),
                family: Family::Syscalls,
                address: 0x1a28ce,
                line: None,
                source: Some(PathBuf::from(
                    "/r/rustix-0.38.44/src/backend/linux_raw/arch/x86_64.rs",
                )),
                frames: Vec::new(),
            }],
        };
        let report = judge(&[old, new], &[binary(&[])], &[placed]);
        assert_eq!(report.findings.len(), 1, "{report:?}");
        let f = &report.findings[0];
        assert_eq!(f.who, "rustix 0.38.44");
        assert_eq!(
            f.evidence,
            ["`rustix::backend::arch::asm::syscall0_readonly` executes the `syscall` instruction, \
              linked into misc test `raw`"]
        );
        assert!(f.what.contains("linux_raw"), "{f:?}");
        // The workspace's own findings take none of it.
        let (own, _) = judge_own(&[], Path::new("/w"));
        assert!(own.is_empty());
    }

    #[test]
    fn a_test_tools_processes_are_a_note() {
        let code = "RELOCATION RECORDS FOR [.text._ZN8trybuild3run17hE]:\n\
                    000000000000000e R_X86_64_PLT32    std::process::Command::output-0x4\n";
        let report = judge(
            &[examined("trybuild", code)],
            &[binary(&["_ZN8trybuild3run17hE"])],
            &[],
        );
        assert_eq!(report.exit_code(), EXIT_CLEAN, "{report:?}");
        assert_eq!(report.notes.len(), 1, "{report:?}");
        assert!(
            report.notes[0].starts_with("trybuild 1.0.0 runs cargo and rustc as processes"),
            "{report:?}"
        );
        assert!(report.notes[0].contains("calls std::process::Command::output"));
    }

    #[test]
    fn unreadable_code_is_unread_not_clean_and_not_a_blocker() {
        let broken = Examined {
            package: package("lto"),
            crate_name: "lto".into(),
            code: Err("objdump -r could not read it".into()),
            source_error: None,
        };
        let report = judge(&[broken], &[binary(&[])], &[]);
        assert_eq!(report.exit_code(), EXIT_UNREAD);
        let text = report.render();
        assert!(
            text.contains("unread: lto 1.0.0: cannot read its code"),
            "{text}"
        );
        assert!(text.contains("not a clean bill"), "{text}");
    }

    #[test]
    fn a_spin_wait_is_a_note_only_where_a_spinners_source_put_it() {
        let mut spin = package("spin");
        spin.version = "0.10.1".into();
        spin.dir = PathBuf::from("/r/spin-0.10.1");
        let mut crossbeam = package("crossbeam-utils");
        crossbeam.dir = PathBuf::from("/r/crossbeam-utils-0.8.23");
        let site = |function: &str, family, address, frames: &[&str], line: Option<u32>| Site {
            owner: Owner::Workspace,
            function: function.into(),
            callee: "the `pause` instruction".into(),
            family,
            address,
            line: line.map(|l| (PathBuf::from("/w/helper/tests/common/mod.rs"), l)),
            source: frames.first().map(PathBuf::from),
            frames: frames.iter().map(PathBuf::from).collect(),
        };
        let mut placed = [
            Placed {
                label: "helper test `double`".into(),
                package: "helper".into(),
                sites: vec![
                    // spin's Mutex::lock, inlined (always) into a helper.
                    site(
                        "double::common::count",
                        Family::Spins,
                        0x10,
                        &[
                            "/rustc/x/library/core/src/hint.rs",
                            "/r/spin-0.10.1/src/relax.rs",
                            "/r/spin-0.10.1/src/mutex/spin.rs",
                            "/w/helper/tests/common/mod.rs",
                        ],
                        Some(9),
                    ),
                    // crossbeam's backoff, which yields after spinning.
                    site(
                        "double::common::send",
                        Family::Spins,
                        0x20,
                        &[
                            "/r/crossbeam-utils-0.8.23/src/backoff.rs",
                            "/w/helper/tests/common/mod.rs",
                        ],
                        Some(14),
                    ),
                    // No debug information: whose it is cannot be told.
                    site("double::common::quiet", Family::Spins, 0x30, &[], None),
                    site(
                        "double::common::raw",
                        Family::RawThreads,
                        0x40,
                        &[],
                        Some(20),
                    ),
                ],
            },
            Placed {
                label: "helper test `triple`".into(),
                package: "helper".into(),
                sites: vec![Site {
                    owner: Owner::Dependency("spin".into()),
                    ..site(
                        "<spin::once::Once<T,R>>::poll",
                        Family::Spins,
                        0x50,
                        &["/r/spin-0.10.1/src/once.rs"],
                        None,
                    )
                }],
            },
        ];
        let notes = judge_spins(&mut placed, &[&spin, &crossbeam], Path::new("/w"));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with(
                "spin 0.10.1 waits by spinning, at helper/tests/common/mod.rs:9 in \
                 `double::common::count`, linked into helper test `double` (and 1 more \
                 executable) (2 spinning places in all): spin's Mutex"
            ),
            "{}",
            notes[0]
        );
        assert!(notes[0].contains("never futex or yield"), "{}", notes[0]);
        assert!(notes[0].contains("SIM_HANG_TIMEOUT"), "{}", notes[0]);
        // Every candidate left `placed`; the raw thread stays a blocker.
        assert!(placed
            .iter()
            .all(|p| p.sites.iter().all(|s| s.family != Family::Spins)));
        let (findings, _) = judge_own(&placed, Path::new("/w"));
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].who, "helper/tests/common/mod.rs:20");
        // Without a spinner in the graph, nothing is said.
        let mut again = [Placed {
            label: "x test `y`".into(),
            package: "x".into(),
            sites: vec![site(
                "x::f",
                Family::Spins,
                0x10,
                &["/r/spin-0.10.1/src/relax.rs"],
                Some(1),
            )],
        }];
        assert!(judge_spins(&mut again, &[&crossbeam], Path::new("/w")).is_empty());
        assert!(again[0].sites.is_empty());
    }

    #[test]
    fn own_places_are_one_finding_per_line_across_executables() {
        let site = |line: Option<u32>| Site {
            owner: Owner::Workspace,
            function: "double::common::expected".into(),
            callee: "clone".into(),
            family: Family::RawThreads,
            address: 0x19f30f,
            line: line.map(|l| (PathBuf::from("/w/helper/tests/common/mod.rs"), l)),
            source: None,
            frames: Vec::new(),
        };
        let own = [
            Placed {
                label: "helper test `double`".into(),
                package: "helper".into(),
                sites: vec![site(Some(3))],
            },
            Placed {
                label: "helper test `triple`".into(),
                package: "helper".into(),
                sites: vec![site(Some(3))],
            },
            Placed {
                label: "helper test `stripped`".into(),
                package: "helper".into(),
                sites: vec![site(None)],
            },
        ];
        let (findings, notes) = judge_own(&own, Path::new("/w"));
        let who: Vec<&str> = findings.iter().map(|f| f.who.as_str()).collect();
        assert_eq!(
            who,
            [
                "helper, in `double::common::expected`",
                "helper/tests/common/mod.rs:3",
            ]
        );
        assert_eq!(
            findings[1].evidence,
            [
                "`double::common::expected` calls clone, linked into helper test `double` (and 1 \
              more executable)"
            ]
        );
        assert_eq!(findings[1].advice, Family::RawThreads.advice());
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("helper test `stripped` has no line information"));
    }
}
