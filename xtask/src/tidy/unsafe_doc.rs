//! Every `unsafe` says why it is sound (CONVENTIONS: "contained, measured
//! `unsafe`, each block with its SAFETY comment").
//!
//! Blocks and `unsafe impl`s are clippy's `undocumented_unsafe_blocks`
//! (a parser reads statements better than a grep): the workspace turns it
//! on in `[workspace.lints.clippy]`, and `cargo xtask ci` runs clippy with
//! `-D warnings` in both modes. This rule checks that it stays on, for
//! every member, and checks what the lint does not: an `unsafe fn` states
//! its contract, the way the code base does, in a `# Safety` section of its
//! docs (or, where the signature is unsafe only to fit a type, such as a
//! waker vtable's, a `// SAFETY:` comment above it). Methods of a trait
//! impl are exempt: the trait states their contract.

use super::source::{is_ident_byte, Source};

/// The lint that checks unsafe blocks and impls.
pub(super) const LINT: &str = "undocumented_unsafe_blocks";

const FN_ADVICE: &str = "an `unsafe fn` states its contract: add a `/// # Safety` section \
                         to its docs saying what the caller must guarantee (or, if it is \
                         unsafe only to fit a type, a `// SAFETY:` comment saying why)";

/// The findings for the `unsafe fn`s of one file.
pub(super) fn check_fns(rel: &str, text: &str) -> Vec<String> {
    let src = Source::new(text);
    let b = src.code.as_bytes();
    let mut findings = Vec::new();
    // The headers of the blocks open at each point: `impl Trait for Type`
    // makes its methods the trait's.
    let mut blocks: Vec<(usize, usize)> = Vec::new(); // each open block's header
    let mut header_start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                blocks.push((header_start, i));
                header_start = i + 1;
            }
            b'}' => {
                blocks.pop();
                header_start = i + 1;
            }
            b';' => header_start = i + 1,
            _ => {}
        }
        if starts_word(b, i, "unsafe") {
            if let Some(name) = declared_fn(&src.code, i + "unsafe".len()) {
                let in_trait_impl = blocks
                    .last()
                    .is_some_and(|&(from, to)| is_trait_impl(&src.code[from..to]));
                let line = src.line_of(i);
                if !in_trait_impl && !documented(&src, line) {
                    findings.push(format!(
                        "{rel}:{}: `unsafe fn {name}` has no `# Safety` section: {FN_ADVICE}",
                        line + 1
                    ));
                }
            }
        }
        i += 1;
    }
    findings
}

/// Whether `b[i..]` starts the word `w`.
fn starts_word(b: &[u8], i: usize, w: &str) -> bool {
    b[i..].starts_with(w.as_bytes())
        && (i == 0 || !is_ident_byte(b[i - 1]))
        && b.get(i + w.len()).is_none_or(|&c| !is_ident_byte(c))
}

/// After `unsafe`: the name of the function it declares (`unsafe fn f`,
/// `unsafe extern "C" fn f`, `unsafe fn $name` in a macro), or `None` for
/// a block, an impl, or a function pointer type (`unsafe fn(..)`).
fn declared_fn(code: &str, from: usize) -> Option<&str> {
    let mut rest = code[from..].trim_start();
    if let Some(after) = rest.strip_prefix("extern") {
        rest = after.trim_start();
        if rest.starts_with('"') {
            let close = rest[1..].find('"')?;
            rest = rest[close + 2..].trim_start();
        }
    }
    let after_fn = rest.strip_prefix("fn")?;
    if after_fn.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return None; // `fnord`
    }
    let name = after_fn.trim_start();
    let len = name
        .bytes()
        .enumerate()
        .position(|(k, c)| !(is_ident_byte(c) || (k == 0 && c == b'$')))
        .unwrap_or(name.len());
    (len > 0).then(|| &name[..len])
}

/// Whether a block's header is `impl<..> Trait for Type` (not an inherent
/// `impl Type`).
fn is_trait_impl(header: &str) -> bool {
    let h = header.trim();
    let h = h.strip_prefix("unsafe").map_or(h, str::trim_start);
    if !h.starts_with("impl") {
        return false;
    }
    let b = h.as_bytes();
    let mut k = 0;
    while let Some(at) = h[k..].find("for") {
        let at = k + at;
        // `impl<F: for<'a> Fn(&'a u8)> X` is a higher-ranked bound,
        // followed by `<`; `impl T for X` is followed by the type.
        if starts_word(b, at, "for") && !h[at + 3..].trim_start().starts_with('<') {
            return true;
        }
        k = at + 3;
    }
    false
}

/// Whether the comments and attributes right above line `fn_line` hold a
/// `# Safety` section or a `SAFETY:` comment.
fn documented(src: &Source<'_>, fn_line: usize) -> bool {
    let mut i = fn_line;
    while i > 0 {
        i -= 1;
        let raw = src.lines[i].trim();
        if raw.starts_with("//") {
            if raw.contains("# Safety") || raw.contains("SAFETY:") {
                return true;
            }
            continue;
        }
        let code = src.code_line(i).trim();
        // Attributes (`#[inline]`, `#[unsafe(no_mangle)]`), possibly over
        // several lines.
        if code.starts_with('#') || code.ends_with(")]") || code.ends_with(',') {
            continue;
        }
        return false;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsafe_fn_needs_its_safety_section() {
        let src = "\
/// Frees it.
///
/// # Safety
/// `p` came from `alloc`.
#[inline]
pub(crate) unsafe fn dealloc(p: *mut u8) {}

/// Frees it, trust me.
unsafe fn careless(p: *mut u8) {}

// SAFETY: unsafe only to fit `RawWakerVTable`; `data` is a live header.
unsafe fn waker_clone(data: *const ()) {}

impl FromRawFd for File {
    unsafe fn from_raw_fd(fd: RawFd) -> Self { todo!() }
}
impl File {
    unsafe fn inherent(&self) {}
}
type Poll = unsafe fn(NonNull<Header>);
macro_rules! m { ($name:ident) => { pub unsafe extern \"C\" fn $name() {} } }
fn f() { let x = unsafe { g() }; }
";
        let f = check_fns("sim-runtime/src/simulation/x.rs", src);
        let at: Vec<&str> = f.iter().map(|l| l.split(": ").next().unwrap()).collect();
        assert_eq!(
            at,
            [
                "sim-runtime/src/simulation/x.rs:9",
                "sim-runtime/src/simulation/x.rs:18",
                "sim-runtime/src/simulation/x.rs:21",
            ],
            "{f:?}"
        );
        assert!(f[0].contains("`unsafe fn careless`"), "{f:?}");
        assert!(f[2].contains("`unsafe fn $name`"), "{f:?}");
        assert!(f[0].contains("add a `/// # Safety` section"), "{f:?}");
    }

    #[test]
    fn trait_impls_are_told_from_inherent_ones() {
        assert!(is_trait_impl("impl FromRawFd for File "));
        assert!(is_trait_impl("unsafe impl<T: Send> Send for JoinHandle<T>"));
        assert!(is_trait_impl("impl<'a> std::io::Read for &'a File"));
        assert!(!is_trait_impl("impl<F: for<'a> Fn(&'a u8)> Task<F>"));
        assert!(!is_trait_impl("impl File"));
        assert!(!is_trait_impl("fn formatter()"));
    }
}
