//! The rule applied to what was read, and the report it gives.

use super::known::{family_of_pattern, known, Family, Shown};
use super::objects::{Code, Symbols};
use crate::graph::Package;
use std::collections::{BTreeMap, BTreeSet};

/// One library of the graph, with what was read about it.
pub(super) struct Examined {
    pub(super) package: Package,
    /// Its compiled code, or why it could not be read.
    pub(super) code: Result<Code, String>,
    pub(super) patterns: Vec<&'static str>,
    /// Why its source could not be searched, if it could not.
    pub(super) source_error: Option<String>,
}

/// One escaping crate.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Finding {
    pub(super) name: String,
    pub(super) version: String,
    pub(super) what: String,
    pub(super) evidence: Vec<String>,
    pub(super) advice: String,
}

#[derive(Debug, Default)]
pub(super) struct Report {
    pub(super) findings: Vec<Finding>,
    pub(super) notes: Vec<String>,
    pub(super) unknown: Vec<String>,
    pub(super) binaries: usize,
    pub(super) crates: usize,
}

impl Report {
    pub(super) fn clean(&self) -> bool {
        self.findings.is_empty() && self.unknown.is_empty()
    }

    pub(super) fn render(&self) -> String {
        let mut s = String::new();
        for f in &self.findings {
            s += &format!(
                "{} {}: {} ({}) — {}\n",
                f.name,
                f.version,
                f.what,
                f.evidence.join("; "),
                f.advice
            );
        }
        for u in &self.unknown {
            s += &format!("unknown: {u} — counted as unknown, not as clean\n");
        }
        for n in &self.notes {
            s += &format!("note: {n}\n");
        }
        let checked = format!(
            "{} test binar{}, {} crate{} outside the workspace and the simulator",
            self.binaries,
            if self.binaries == 1 { "y" } else { "ies" },
            self.crates,
            if self.crates == 1 { "" } else { "s" }
        );
        if self.clean() {
            s += &format!("checked: {checked}\n");
            s += "cargo sim doctor: nothing in this graph escapes the seed that doctor knows of\n";
        } else {
            let n = self.findings.len();
            s += &format!(
                "cargo sim doctor: {n} crate{} escape{} the seed{} ({checked})\n",
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" },
                if self.unknown.is_empty() {
                    String::new()
                } else {
                    format!(", {} thing(s) could not be read", self.unknown.len())
                }
            );
        }
        s
    }
}

/// Applies the rule (see the module's comment) to what was read.
pub(super) fn judge(examined: &[Examined], binaries: &[Symbols]) -> Report {
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
        let own = format!("{}::", p.name.replace('-', "_"));
        // Where any of its code is linked.
        let linked_in: Vec<&Symbols> = binaries
            .iter()
            .filter(|b| code.functions.iter().any(|f| b.defined.contains(f)))
            .collect();
        // Family → (caller, callee, binary, every binary it is linked into).
        type Linked = (String, String, String, BTreeSet<String>);
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
                let entry = linked.entry(call.family).or_insert_with(|| {
                    (
                        caller.clone(),
                        call.callee.clone(),
                        b.label.clone(),
                        BTreeSet::new(),
                    )
                });
                entry.3.insert(b.label.clone());
                // A caller of the crate's own name says more than a std
                // generic instantiated in it.
                if !entry.0.contains(&own) && caller.contains(&own) {
                    entry.0 = caller;
                    entry.1 = call.callee.clone();
                    entry.2 = b.label.clone();
                }
            }
        }
        let k = known(&p.name);
        if let Some(err) = &e.source_error {
            report.notes.push(format!(
                "{} {}: its source could not be searched ({err}); a TSC read there would go \
                 unseen",
                p.name, p.version
            ));
        }
        let tsc_source = e
            .patterns
            .iter()
            .any(|q| family_of_pattern(q) == Family::Tsc);
        let mut evidence: Vec<String> = Vec::new();
        let mut families: Vec<Family> = Vec::new();
        for (family, (caller, callee, label, all)) in &linked {
            families.push(*family);
            let more = match all.len() {
                0 | 1 => String::new(),
                2 => " (and 1 more test binary)".to_string(),
                n => format!(" (and {} more test binaries)", n - 1),
            };
            evidence.push(format!(
                "{caller} calls {callee}, linked into {label}{more}"
            ));
        }
        if !families.contains(&Family::Tsc)
            && (tsc_source || k.is_some_and(|k| k.shown == Shown::Tsc))
        {
            if let Some(b) = linked_in.first() {
                families.push(Family::Tsc);
                evidence.push(format!(
                    "{}, and its code is linked into {}",
                    if tsc_source {
                        "its source reads the TSC"
                    } else {
                        "a known TSC reader"
                    },
                    b.label
                ));
            }
        }
        // Native code built without function sections (or linked from a
        // system library) leaves nothing to tell by: built in is enough.
        let native = k
            .filter(|k| k.shown == Shown::Native)
            .and_then(|_| match linked_in.first() {
                Some(b) => Some(format!("known native code, linked into {}", b.label)),
                None if code.functions.is_empty() => {
                    Some("known native code, built into the tests".to_string())
                }
                None => None,
            });
        let only_source: Vec<&str> = e
            .patterns
            .iter()
            .copied()
            .filter(|q| !families.contains(&family_of_pattern(q)))
            .collect();
        let source: Vec<&str> = e
            .patterns
            .iter()
            .copied()
            .filter(|q| families.contains(&family_of_pattern(q)))
            .collect();
        if families.is_empty() && native.is_none() {
            if !only_source.is_empty() {
                report.notes.push(format!(
                    "{} {}: {} in the source only (no function of it that calls one is linked \
                     into a test binary)",
                    p.name,
                    p.version,
                    only_source.join(", ")
                ));
            }
            if let (Some(k), Some(b)) = (k, linked_in.first()) {
                report.notes.push(format!(
                    "{} {}: known: {}; but no function of it that does so is linked into {} \
                     (or another test binary)",
                    p.name, p.version, k.what, b.label
                ));
            }
            continue;
        }
        evidence.extend(native);
        if !source.is_empty() {
            evidence.push(format!("source: {}", source.join(", ")));
        }
        if !only_source.is_empty() {
            evidence.push(format!("in the source only: {}", only_source.join(", ")));
        }
        let (what, advice) = match k {
            Some(k) => (k.what.to_string(), k.advice.to_string()),
            None => (
                families
                    .iter()
                    .map(|f| f.what())
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
            name: p.name.clone(),
            version: p.version.clone(),
            what,
            evidence,
            advice,
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::super::objects::{parse_relocations, OBJDUMP};
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

    fn examined(name: &str, code: &str, patterns: &[&'static str]) -> Examined {
        Examined {
            package: package(name),
            code: Ok(parse_relocations(code.as_bytes()).unwrap()),
            patterns: patterns.to_vec(),
            source_error: None,
        }
    }

    #[test]
    fn a_crate_escapes_only_through_its_own_linked_calls() {
        let spawner = examined(
            "spawner",
            OBJDUMP,
            &["thread::spawn", "std::fs::", "std::net::"],
        );
        // `start` is linked, `unused_open` is not: threads count, files
        // are in the source only.
        let report = judge(
            std::slice::from_ref(&spawner),
            &[binary(&["_ZN7spawner5start17hE"])],
        );
        assert_eq!(report.findings.len(), 1, "{report:?}");
        let f = &report.findings[0];
        assert_eq!(f.name, "spawner");
        assert_eq!(f.what, Family::Threads.what());
        assert!(
            f.evidence[0].starts_with(
                "demangled(_ZN7spawner5start17hE) calls std::thread::functions::spawn, linked \
                 into app test `t`"
            ),
            "{f:?}"
        );
        assert!(
            f.evidence.contains(&"source: thread::spawn".to_string()),
            "{f:?}"
        );
        assert!(
            f.evidence
                .contains(&"in the source only: std::fs::, std::net::".to_string()),
            "{f:?}"
        );
        let line = report.render();
        assert!(
            line.starts_with("spawner 1.0.0: starts OS threads"),
            "{line}"
        );
        assert!(line.contains(" — run that work on tokio::spawn"), "{line}");
        assert!(
            line.contains("cargo sim doctor: 1 crate escapes the seed"),
            "{line}"
        );
        // Nothing of it linked: a note, and a clean exit.
        let report = judge(&[spawner], &[binary(&["_ZN5other1f17hE"])]);
        assert!(report.clean(), "{report:?}");
        assert!(
            report.notes[0].contains("thread::spawn, std::fs::, std::net:: in the source only"),
            "{report:?}"
        );
        assert!(report
            .render()
            .ends_with("nothing in this graph escapes the seed that doctor knows of\n"));
    }

    #[test]
    fn tsc_readers_count_when_linked_and_known_native_code_when_built() {
        let quanta_code = "RELOCATION RECORDS FOR [.text._ZN6quanta3now17hE]:\n\
                           0000000000000003 R_X86_64_PC32     .rodata..Lanon.1.0-0x4\n";
        let quanta = examined("quanta", quanta_code, &[]);
        let by_source = examined(
            "ticks",
            &quanta_code.replace("6quanta", "5ticks"),
            &["_rdtsc"],
        );
        let sqlite = examined("libsqlite3-sys", "", &[]);
        let linked = binary(&["_ZN6quanta3now17hE", "_ZN5ticks3now17hE"]);
        let report = judge(&[quanta, by_source, sqlite], &[linked]);
        let names: Vec<&str> = report.findings.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["quanta", "ticks", "libsqlite3-sys"], "{report:?}");
        assert!(report.findings[0].evidence[0].contains("a known TSC reader"));
        assert!(report.findings[1].evidence[0].contains("its source reads the TSC"));
        assert_eq!(report.findings[1].what, Family::Tsc.what());
        assert_eq!(
            report.findings[2].evidence[0],
            "known native code, built into the tests"
        );
        // Their code built but none of it linked: nothing can run, nothing
        // counts (a known crate says so in a note only if linked).
        let rocks = "RELOCATION RECORDS FOR [.text.rocksdb_open]:\n\
                     0000000000000003 R_X86_64_PLT32    open64-0x4\n";
        let mut unlinked = vec![
            examined("quanta", quanta_code, &[]),
            examined("librocksdb-sys", rocks, &[]),
        ];
        unlinked[0].source_error = Some("/r/quanta/src: not found".into());
        let report = judge(&unlinked, &[binary(&["_ZN5other1f17hE"])]);
        assert!(report.clean(), "{report:?}");
        assert_eq!(report.notes.len(), 1, "{report:?}");
        assert!(
            report.notes[0].contains("could not be searched"),
            "{report:?}"
        );
    }

    #[test]
    fn unreadable_code_is_unknown_not_clean() {
        let broken = Examined {
            package: package("lto"),
            code: Err("objdump -r could not read it".into()),
            patterns: vec![],
            source_error: None,
        };
        let report = judge(&[broken], &[binary(&[])]);
        assert!(!report.clean());
        let text = report.render();
        assert!(
            text.contains("unknown: lto 1.0.0: cannot read its code"),
            "{text}"
        );
        assert!(text.contains("could not be read"), "{text}");
    }
}
