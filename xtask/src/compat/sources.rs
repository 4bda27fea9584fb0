//! Reading the test sources.

/// Whether the file's own `#![cfg]` needs `tokio_unstable`.
pub(super) fn is_unstable_only(source: &str) -> bool {
    let mut attr = String::new();
    let mut inside = false;
    for line in source.lines() {
        // A comment after the attribute (`))] // WASI does not ...`) must
        // not hide its end (cfg attributes hold no `//` in their strings).
        let l = line.split("//").next().unwrap_or("").trim();
        if l.starts_with("#![cfg(") {
            inside = true;
            attr.clear();
        }
        if inside {
            attr.push_str(l);
            if l.ends_with(")]") {
                inside = false;
                if attr.contains("tokio_unstable") && !attr.contains("not(tokio_unstable") {
                    return true;
                }
            }
        }
    }
    false
}

/// The line of the test function (the last segment of the test's path).
pub(super) fn test_line(source: &str, test: &str) -> Option<usize> {
    let f = test.rsplit("::").next()?;
    let needle = format!("fn {f}(");
    source
        .lines()
        .position(|l| l.contains(&needle))
        .map(|i| i + 1)
}

/// A rough count of a file's tests (only used when it compiles neither
/// against sim-runtime nor against real Tokio).
pub(super) fn count_test_attributes(source: &str) -> usize {
    source
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("#[test]")
                || l.starts_with("#[tokio::test")
                || l.starts_with("#[maybe_tokio_test")
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unstable_files() {
        assert!(is_unstable_only(
            "#![cfg(all(tokio_unstable, feature = \"tracing\"))]\nuse x;"
        ));
        assert!(is_unstable_only(
            "#![warn(x)]\n#![cfg(all(\n    tokio_unstable,\n    feature = \"full\"\n))]\n"
        ));
        assert!(!is_unstable_only(
            "#![cfg(feature = \"full\")]\n#[cfg(tokio_unstable)]\nfn a() {}"
        ));
        // fs_try_exists: the file's cfg ends in a comment; a later item's
        // cfg names tokio_unstable.
        assert!(!is_unstable_only(
            "#![cfg(all(\n    feature = \"full\",\n    not(target_os = \"wasi\")\n))] // WASI \
             does not support all fs operations\n\nfn t() {\n    #[cfg(all(\n        unix,\n        \
             not(any(target_os = \"freebsd\", all(tokio_unstable, feature = \"io-uring\")))\n    \
             ))]\n    {}\n}\n"
        ));
        assert!(is_unstable_only(
            "#![cfg(all(\n    tokio_unstable,\n    feature = \"full\"\n))] // unstable only\n"
        ));
    }
}
