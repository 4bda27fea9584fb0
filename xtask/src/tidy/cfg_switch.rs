//! One switch per crate (ARCHITECTURE.md: "`sim-runtime/src/lib.rs` is the
//! only file that tests `cfg(simulation)`"; sim-harness's `lib.rs` is that
//! crate's switch): a single file chooses the real or the simulated
//! implementation, and every other file of the crate's sources imports from
//! what it chose. Checked on `cfg(..)`, `cfg_attr(..)` and `cfg!(..)` in
//! code that name `simulation` (comments and strings do not count).

use super::source::{is_ident_byte, Source};

/// A crate whose sources have one switch.
pub(super) struct Switch {
    /// Its sources (a folder, from the workspace root).
    pub(super) dir: &'static str,
    /// The one file that tests the cfg.
    pub(super) switch: &'static str,
    /// Other files that do, each with why (an exception to remove).
    pub(super) allowed: &'static [(&'static str, &'static str)],
}

pub(super) const SWITCHES: &[Switch] = &[
    Switch {
        dir: "sim-runtime/src/",
        switch: "sim-runtime/src/lib.rs",
        allowed: &[],
    },
    Switch {
        dir: "sim-harness/src/",
        switch: "sim-harness/src/lib.rs",
        allowed: &[(
            "sim-harness/src/macros.rs",
            "the `#[macro_export]` `__site!` behind `sometimes!`/`reachable!` has a \
             simulated and a production definition side by side (they could move into \
             lib.rs's switch)",
        )],
    },
];

/// The findings in one file (`rel`: from the workspace root).
pub(super) fn check(rel: &str, text: &str) -> Vec<String> {
    let Some(s) = SWITCHES.iter().find(|s| rel.starts_with(s.dir)) else {
        return Vec::new();
    };
    if rel == s.switch || s.allowed.iter().any(|(f, _)| *f == rel) {
        return Vec::new();
    }
    let src = Source::new(text);
    simulation_cfgs(&src.code)
        .into_iter()
        .map(|at| {
            format!(
                "{rel}:{}: tests `cfg(simulation)`: only {} does, the crate's one switch \
                 (ARCHITECTURE.md): import what differs from a module it selects, or put \
                 the item in the simulation's own module",
                src.line_of(at) + 1,
                s.switch
            )
        })
        .collect()
}

/// The offsets of the `cfg(..)`, `cfg_attr(..)` and `cfg!(..)` in masked
/// code whose condition names `simulation`.
fn simulation_cfgs(code: &str) -> Vec<usize> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("cfg") {
        let at = from + found;
        from = at + 3;
        if at > 0 && is_ident_byte(b[at - 1]) {
            continue;
        }
        let rest = &code[from..];
        let rest = rest
            .strip_prefix("_attr")
            .or_else(|| rest.strip_prefix('!'))
            .unwrap_or(rest)
            .trim_start();
        let Some(inner) = rest.strip_prefix('(') else {
            continue;
        };
        let mut depth = 1;
        let end = inner
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map_or(inner.len(), |(i, _)| i);
        if names_word(&inner[..end], "simulation") {
            out.push(at);
        }
    }
    out
}

fn names_word(text: &str, word: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices(word).any(|(i, _)| {
        let end = i + word.len();
        (i == 0 || !is_ident_byte(b[i - 1])) && (end == b.len() || !is_ident_byte(b[end]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_switch_tests_the_cfg() {
        let src = "#[cfg(simulation)]\nmod a;\n#[cfg_attr(not(simulation), allow(x))]\nfn b() { if cfg!(simulation) {} }\n";
        assert!(check("sim-runtime/src/lib.rs", src).is_empty());
        let f = check("sim-runtime/src/simulation/io.rs", src);
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(
            f[0].starts_with("sim-runtime/src/simulation/io.rs:1: "),
            "{f:?}"
        );
        assert!(
            f[2].starts_with("sim-runtime/src/simulation/io.rs:4: "),
            "{f:?}"
        );
        assert!(f[0].contains("only sim-runtime/src/lib.rs does"), "{f:?}");
        assert!(check("sim-harness/src/macros.rs", src).is_empty());
        assert_eq!(check("sim-harness/src/world.rs", src).len(), 3);
        assert!(check("sim-net/src/net.rs", src).is_empty());
    }

    #[test]
    fn comments_strings_and_other_cfgs_are_fine() {
        let src = "//! Built with `--cfg simulation` or #[cfg(simulation)].\n\
                   let s = \"#[cfg(simulation)]\";\n\
                   #[cfg(sim_graph)]\nfn a() {}\n#[cfg(feature = \"simulation_x\")]\nfn b() {}\n";
        assert!(check("sim-runtime/src/hyper.rs", src).is_empty());
    }
}
