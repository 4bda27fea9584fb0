//! The XML bodies S3 sends and the two it reads (CompleteMultipartUpload,
//! Delete).

use quick_xml::events::Event;
use quick_xml::Reader;
use std::fmt::Write as _;

const NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// `&`, `<`, `>`, `"` and `'` as entities.
pub(crate) fn escape(s: &str) -> String {
    quick_xml::escape::escape(s).into_owned()
}

pub(crate) fn error(code: &str, message: &str, resource: &str, request_id: u64) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{}</Message><Resource>{}</Resource><RequestId>{request_id}</RequestId></Error>",
        escape(message),
        escape(resource)
    )
}

pub(crate) struct Listed<'a> {
    pub key: &'a str,
    pub size: u64,
    pub etag: &'a str,
    pub modified: String,
}

pub(crate) struct ListPage<'a> {
    pub bucket: &'a str,
    pub prefix: &'a str,
    pub delimiter: Option<&'a str>,
    pub max_keys: usize,
    pub start_after: Option<&'a str>,
    pub token: Option<&'a str>,
    pub next_token: Option<String>,
    pub contents: Vec<Listed<'a>>,
    pub prefixes: Vec<String>,
}

pub(crate) fn list(page: &ListPage<'_>) -> String {
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"{NS}\"><Name>{}</Name><Prefix>{}</Prefix><KeyCount>{}</KeyCount><MaxKeys>{}</MaxKeys><IsTruncated>{}</IsTruncated>",
        escape(page.bucket),
        escape(page.prefix),
        page.contents.len() + page.prefixes.len(),
        page.max_keys,
        page.next_token.is_some(),
    );
    if let Some(d) = page.delimiter {
        let _ = write!(out, "<Delimiter>{}</Delimiter>", escape(d));
    }
    if let Some(s) = page.start_after {
        let _ = write!(out, "<StartAfter>{}</StartAfter>", escape(s));
    }
    if let Some(t) = page.token {
        let _ = write!(out, "<ContinuationToken>{}</ContinuationToken>", escape(t));
    }
    if let Some(t) = &page.next_token {
        let _ = write!(
            out,
            "<NextContinuationToken>{}</NextContinuationToken>",
            escape(t)
        );
    }
    for c in &page.contents {
        let _ = write!(
            out,
            "<Contents><Key>{}</Key><LastModified>{}</LastModified><ETag>{}</ETag><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
            escape(c.key),
            c.modified,
            escape(c.etag),
            c.size
        );
    }
    for p in &page.prefixes {
        let _ = write!(
            out,
            "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
            escape(p)
        );
    }
    out.push_str("</ListBucketResult>");
    out
}

pub(crate) fn initiated(bucket: &str, key: &str, id: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult xmlns=\"{NS}\"><Bucket>{}</Bucket><Key>{}</Key><UploadId>{}</UploadId></InitiateMultipartUploadResult>",
        escape(bucket),
        escape(key),
        escape(id)
    )
}

pub(crate) fn completed(bucket: &str, key: &str, etag: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult xmlns=\"{NS}\"><Location>/{}/{}</Location><Bucket>{}</Bucket><Key>{}</Key><ETag>{}</ETag></CompleteMultipartUploadResult>",
        escape(bucket),
        escape(key),
        escape(bucket),
        escape(key),
        escape(etag)
    )
}

/// CopyObjectResult, or CopyPartResult for `part`.
pub(crate) fn copied(part: bool, etag: &str, modified: &str) -> String {
    let tag = if part {
        "CopyPartResult"
    } else {
        "CopyObjectResult"
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{tag} xmlns=\"{NS}\"><LastModified>{modified}</LastModified><ETag>{}</ETag></{tag}>",
        escape(etag)
    )
}

pub(crate) fn deleted(keys: &[String], quiet: bool) -> String {
    let mut out =
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult xmlns=\"{NS}\">");
    if !quiet {
        for k in keys {
            let _ = write!(out, "<Deleted><Key>{}</Key></Deleted>", escape(k));
        }
    }
    out.push_str("</DeleteResult>");
    out
}

/// Calls `each(name, text)` for each leaf element of `body`, in document
/// order.
fn leaves(body: &[u8], mut each: impl FnMut(&str, String)) -> Result<(), String> {
    let mut reader = Reader::from_reader(body);
    let mut open: Option<String> = None;
    let mut text = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                open = Some(String::from_utf8_lossy(e.local_name().as_ref()).into_owned());
                text.clear();
            }
            Ok(Event::Text(t)) => {
                let t = t.decode().map_err(|e| e.to_string())?;
                let t = quick_xml::escape::unescape(&t).map_err(|e| e.to_string())?;
                text.push_str(&t);
            }
            Ok(Event::GeneralRef(r)) => {
                let name = r.decode().map_err(|e| e.to_string())?;
                let entity = format!("&{name};");
                let t = quick_xml::escape::unescape(&entity).map_err(|e| e.to_string())?;
                text.push_str(&t);
            }
            Ok(Event::End(_)) => {
                if let Some(name) = open.take() {
                    each(&name, std::mem::take(&mut text));
                }
            }
            Ok(Event::Eof) => return Ok(()),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// CompleteMultipartUpload's parts: (PartNumber, ETag), in order.
pub(crate) fn parts(body: &[u8]) -> Result<Vec<(u32, String)>, String> {
    let mut parts = Vec::new();
    // A part is done when both of its leaves have closed, in either order.
    let mut n: Option<u32> = None;
    let mut e: Option<String> = None;
    leaves(body, |name, text| {
        match name {
            "PartNumber" => n = text.trim().parse().ok(),
            "ETag" => e = Some(text.trim().to_owned()),
            _ => return,
        }
        if let (Some(num), Some(tag)) = (n, e.clone()) {
            parts.push((num, tag));
            n = None;
            e = None;
        }
    })?;
    Ok(parts)
}

/// Delete's keys and whether it is quiet.
pub(crate) fn delete_keys(body: &[u8]) -> Result<(Vec<String>, bool), String> {
    let mut keys = Vec::new();
    let mut quiet = false;
    leaves(body, |name, text| match name {
        "Key" => keys.push(text),
        "Quiet" => quiet = text.trim() == "true",
        _ => {}
    })?;
    Ok((keys, quiet))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_pair_numbers_with_etags_in_either_order() {
        let body = br#"<CompleteMultipartUpload><Part><ETag>"a"</ETag><PartNumber>1</PartNumber></Part><Part><PartNumber>2</PartNumber><ETag>&quot;b&quot;</ETag></Part></CompleteMultipartUpload>"#;
        assert_eq!(
            parts(body).unwrap(),
            vec![(1, "\"a\"".to_string()), (2, "\"b\"".to_string())]
        );
    }

    #[test]
    fn delete_reads_keys_with_entities() {
        let body = b"<Delete><Quiet>true</Quiet><Object><Key>a&amp;b</Key></Object><Object><Key>c</Key></Object></Delete>";
        assert_eq!(
            delete_keys(body).unwrap(),
            (vec!["a&b".to_string(), "c".to_string()], true)
        );
    }
}
