//! Reading rustdoc's HTML: the list of items (`all.html`), a page's
//! sections, its code headers, and a code header as Rust text.
//!
//! A link in a code header carries the item's kind and defining path in
//! its `title` ("struct tokio::net::TcpStream", "type
//! std::io::error::Result"); `code_text` keeps it as a placeholder,
//! `LINK_OPEN kind path LINK_CLOSE`, which the generator later replaces by a
//! path the test can name (or drops the check when there is none).

pub const LINK_OPEN: char = '\u{1}';
pub const LINK_CLOSE: char = '\u{2}';

/// rustdoc's entities, the few it writes.
pub fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

/// The value of attribute `name` in a tag's text (`<a class="x" href=..>`).
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let end = tag[i..].find('"')?;
    Some(&tag[i..i + end])
}

/// A code header (or declaration) as one line of Rust: tags dropped,
/// entities unescaped, whitespace collapsed, each link to an item replaced by
/// a placeholder with its kind and path. A link to an associated item or a
/// primitive keeps its text (`Output`, `u8`, `&mut B`).
pub fn code_text(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.push_str(&unescape(&rest[..lt]));
        let gt = match rest[lt..].find('>') {
            Some(g) => lt + g,
            None => break,
        };
        let tag = &rest[lt..=gt];
        rest = &rest[gt + 1..];
        if tag.starts_with("<a ") {
            let end = rest.find("</a>").unwrap_or(rest.len());
            let inner = strip_tags(&rest[..end]);
            let title = attr(tag, "title").map(unescape);
            let href = attr(tag, "href").unwrap_or("");
            match title {
                // The "notable traits" marker after a result type.
                _ if attr(tag, "class") == Some("tooltip") => {}
                Some(t) if !href.contains('#') && t.contains(' ') => {
                    // rustdoc writes `tokio::net::tcp::` before a link whose
                    // name alone would be ambiguous: the link says it all.
                    while out.ends_with("::") {
                        let keep = out[..out.len() - 2]
                            .trim_end_matches(|c: char| c.is_alphanumeric() || c == '_')
                            .len();
                        out.truncate(keep);
                    }
                    out.push(LINK_OPEN);
                    out.push_str(&t);
                    out.push(LINK_CLOSE);
                }
                _ => out.push_str(&inner),
            }
            rest = rest.get(end + 4..).unwrap_or("");
        } else if tag.starts_with("<br") || tag.starts_with("<div") || tag.starts_with("</div") {
            out.push(' ');
        }
    }
    out.push_str(&unescape(rest));
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text of some HTML, tags dropped, entities unescaped.
pub fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    unescape(&out)
}

/// One `<h2 id=..>` section of a page: its id and its HTML up to the next.
pub fn sections(page: &str) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    let marks: Vec<usize> = page.match_indices("<h2 id=\"").map(|(i, _)| i).collect();
    for (n, &i) in marks.iter().enumerate() {
        let id_start = i + "<h2 id=\"".len();
        let id_end = id_start + page[id_start..].find('"').unwrap_or(0);
        let end = marks.get(n + 1).copied().unwrap_or(page.len());
        out.push((page[id_start..id_end].to_string(), &page[i..end]));
    }
    out
}

/// The declaration at the top of an item's page (`pub struct JoinHandle<T> {..}`).
pub fn item_decl(page: &str) -> Option<&str> {
    let start = page.find("<pre class=\"rust item-decl\"><code>")?;
    let body = &page[start + "<pre class=\"rust item-decl\"><code>".len()..];
    let end = body.find("</code></pre>")?;
    Some(&body[..end])
}

/// A code header: its level (3 for an impl or a variant, 4 for an item of
/// an impl), the id of the section it sits in (`method.peek`), its HTML.
pub struct Header<'a> {
    pub level: u8,
    pub anchor: &'a str,
    pub html: &'a str,
}

/// Every code header of `chunk`, in order.
pub fn headers(chunk: &str) -> Vec<Header<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let h3 = chunk[at..].find("<h3 class=\"code-header\">");
        let h4 = chunk[at..].find("<h4 class=\"code-header\">");
        let (i, level) = match (h3, h4) {
            (Some(a), Some(b)) if a < b => (at + a, 3),
            (Some(a), None) => (at + a, 3),
            (_, Some(b)) => (at + b, 4),
            (None, None) => break,
        };
        let open = "<h3 class=\"code-header\">".len();
        let close = if level == 3 { "</h3>" } else { "</h4>" };
        let end = i + open + chunk[i + open..].find(close).unwrap_or(0);
        let anchor = chunk[..i]
            .rfind("<section id=\"")
            .map(|s| {
                let s = s + "<section id=\"".len();
                &chunk[s..s + chunk[s..].find('"').unwrap_or(0)]
            })
            .unwrap_or("");
        out.push(Header {
            level,
            anchor,
            html: &chunk[i + open..end],
        });
        at = end;
    }
    out
}

/// The public fields of a struct's page: name and type (code text).
pub fn fields(chunk: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, _) in chunk.match_indices("<span id=\"structfield.") {
        let s = &chunk[i..];
        let Some(code) = s.find("<code>") else {
            continue;
        };
        let Some(end) = s[code..].find("</code>") else {
            continue;
        };
        let text = code_text(&s[code + 6..code + end]);
        if let Some((name, ty)) = text.split_once(':') {
            out.push((name.trim().to_string(), ty.trim().to_string()));
        }
    }
    out
}

/// `all.html`: each item's kind (the section: `structs`, `functions`, ..),
/// its path inside the crate (`net::TcpStream`), and its page.
pub fn all_items(all: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut kind = String::new();
    let mut rest = all;
    loop {
        let h = rest.find("<h3 id=\"");
        let li = rest.find("<li><a href=\"");
        match (h, li) {
            (Some(a), b) if b.is_none_or(|b| a < b) => {
                let s = a + "<h3 id=\"".len();
                let e = s + rest[s..].find('"').unwrap_or(0);
                kind = rest[s..e].to_string();
                rest = &rest[e..];
            }
            (_, Some(b)) => {
                let s = b + "<li><a href=\"".len();
                let e = s + rest[s..].find('"').unwrap_or(0);
                let href = rest[s..e].to_string();
                let t = e + rest[e..].find('>').unwrap_or(0) + 1;
                let te = t + rest[t..].find('<').unwrap_or(0);
                if !href.starts_with('#') {
                    out.push((kind.clone(), unescape(&rest[t..te]), href));
                }
                rest = &rest[te..];
            }
            _ => break,
        }
    }
    out
}

/// A module page's re-exports: the name each is visible by, and its
/// declaration (`pub use task::spawn;`) as code text.
pub fn reexports(index: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, _) in index.match_indices("<dt id=\"reexport.") {
        let s = i + "<dt id=\"reexport.".len();
        let name = &index[s..s + index[s..].find('"').unwrap_or(0)];
        let end = s + index[s..].find("</dt>").unwrap_or(0);
        out.push((name.to_string(), code_text(&index[s..end])));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_header_becomes_rust_with_placeholders() {
        let h = r##"pub fn <a href="#method.local_addr" class="fn">local_addr</a>(&amp;self) -&gt; <a class="type" href="https://x/std/io/error/type.Result.html" title="type std::io::error::Result">Result</a>&lt;<a class="primitive" href="https://x/primitive.usize.html">usize</a>&gt;"##;
        assert_eq!(
            code_text(h),
            "pub fn local_addr(&self) -> \u{1}type std::io::error::Result\u{2}<usize>"
        );
    }

    #[test]
    fn headers_know_their_section() {
        let chunk = r#"<section id="method.a" class="method"><h4 class="code-header">pub fn a()</h4></section><section id="impl-X"><h3 class="code-header">impl X</h3></section>"#;
        let hs = headers(chunk);
        assert_eq!(hs.len(), 2);
        assert_eq!(
            (hs[0].level, hs[0].anchor, hs[0].html),
            (4, "method.a", "pub fn a()")
        );
        assert_eq!((hs[1].level, hs[1].anchor), (3, "impl-X"));
    }
}
