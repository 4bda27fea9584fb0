//! Objects on the node's disk, durable before they are acknowledged.
//!
//! Layout under the store's root: `b/<bucket>/o/<key>` holds one object
//! (a text header, an empty line, the body), `b/<bucket>/u/<upload id>/`
//! one multipart upload (`target` and a file per part), `tmp/` files being
//! written. Every object is written whole to `tmp/`, synced, renamed into
//! place and its folder synced before the store answers: a crash leaves the
//! old object or the new one, never a torn one, and never loses an
//! acknowledged write. Keys become file names with every byte other than
//! `[A-Za-z0-9._-]` as `%XX` (a leading `.` too).

use bytes::Bytes;
use md5::{Digest, Md5};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::fs;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

/// S3's smallest part, but for the last one.
pub(crate) const MIN_PART: usize = 5 * 1024 * 1024;

/// What a HEAD shows of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Quoted, as S3 sends it.
    pub etag: String,
    pub size: u64,
    /// Milliseconds since the epoch.
    pub modified_ms: u64,
    pub content_type: Option<String>,
    /// `x-amz-meta-*` headers, names without the prefix, in order.
    pub user: Vec<(String, String)>,
}

impl Meta {
    pub(crate) fn modified(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.modified_ms)
    }
}

/// What a write needs of the object it replaces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Cond {
    #[default]
    None,
    /// `If-None-Match: *`: only if there is none.
    Absent,
    /// `If-Match: <etag>` (or `*`: any).
    Matches(String),
}

/// Why a write was refused.
#[derive(Debug)]
pub(crate) enum Refused {
    /// 412 PreconditionFailed.
    Precondition,
    /// 404 NoSuchKey (`If-Match` on no object, as S3 answers).
    NoSuchKey,
    NoSuchUpload,
    /// 400 InvalidPart / InvalidPartOrder / EntityTooSmall, with a message.
    BadParts(&'static str, String),
    Io(io::Error),
}

impl From<io::Error> for Refused {
    fn from(e: io::Error) -> Self {
        Refused::Io(e)
    }
}

pub(crate) struct Store {
    root: PathBuf,
    next: AtomicU64,
    /// Conditions are checked and objects installed one at a time.
    commit: tokio::sync::Mutex<()>,
    /// When a key written under a list lag shows in listings.
    shows_at: Mutex<BTreeMap<(String, String), Instant>>,
}

impl Store {
    pub(crate) async fn open(root: PathBuf, buckets: &[String]) -> io::Result<Self> {
        make_dirs(&root.join("b")).await?;
        let tmp = root.join("tmp");
        // What a crash left half written is no object.
        if fs::try_exists(&tmp).await? {
            fs::remove_dir_all(&tmp).await?;
        }
        make_dirs(&tmp).await?;
        let store = Self {
            root,
            next: AtomicU64::new(0),
            commit: tokio::sync::Mutex::new(()),
            shows_at: Mutex::default(),
        };
        for b in buckets {
            store.create_bucket(b).await?;
        }
        Ok(store)
    }

    fn bucket_dir(&self, bucket: &str) -> PathBuf {
        self.root.join("b").join(bucket)
    }

    fn object_path(&self, bucket: &str, key: &str) -> PathBuf {
        self.bucket_dir(bucket).join("o").join(encode_key(key))
    }

    fn upload_dir(&self, bucket: &str, id: &str) -> PathBuf {
        self.bucket_dir(bucket).join("u").join(id)
    }

    fn fresh(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) async fn bucket_exists(&self, bucket: &str) -> io::Result<bool> {
        fs::try_exists(self.bucket_dir(bucket).join("o")).await
    }

    pub(crate) async fn create_bucket(&self, bucket: &str) -> io::Result<()> {
        let dir = self.bucket_dir(bucket);
        make_dirs(&dir.join("o")).await?;
        make_dirs(&dir.join("u")).await
    }

    /// Writes `bytes` whole and durably as `dir/name`.
    async fn install(&self, dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = self.root.join("tmp").join(self.fresh().to_string());
        let mut f = fs::File::create(&tmp).await?;
        f.write_all(bytes).await?;
        f.sync_all().await?;
        drop(f);
        fs::rename(&tmp, dir.join(name)).await?;
        sync_dir(dir).await
    }

    pub(crate) async fn get(&self, bucket: &str, key: &str) -> io::Result<Option<(Meta, Bytes)>> {
        match fs::read(self.object_path(bucket, key)).await {
            Ok(bytes) => parse(Bytes::from(bytes)).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn check(&self, bucket: &str, key: &str, cond: &Cond) -> Result<(), Refused> {
        if *cond == Cond::None {
            return Ok(());
        }
        let now = self.get(bucket, key).await?.map(|(m, _)| m.etag);
        match (cond, now) {
            (Cond::Absent, Some(_)) => Err(Refused::Precondition),
            (Cond::Matches(_), None) => Err(Refused::NoSuchKey),
            (Cond::Matches(want), Some(etag)) if want != "*" && !same_etag(want, &etag) => {
                Err(Refused::Precondition)
            }
            _ => Ok(()),
        }
    }

    /// Installs an object whose etag is given (multipart) or its MD5.
    #[allow(clippy::too_many_arguments)]
    async fn commit_object(
        &self,
        bucket: &str,
        key: &str,
        etag: Option<String>,
        content_type: Option<String>,
        user: Vec<(String, String)>,
        body: &[u8],
        cond: &Cond,
        list_lag: Duration,
    ) -> Result<Meta, Refused> {
        let _one = self.commit.lock().await;
        self.check(bucket, key, cond).await?;
        let meta = Meta {
            etag: etag.unwrap_or_else(|| format!("\"{}\"", hex(&Md5::digest(body)))),
            size: body.len() as u64,
            modified_ms: now_ms(),
            content_type,
            user,
        };
        let dir = self.bucket_dir(bucket).join("o");
        self.install(&dir, &encode_key(key), &render(&meta, body))
            .await?;
        let mut shows = self.shows_at.lock().unwrap_or_else(|e| e.into_inner());
        if list_lag.is_zero() {
            shows.remove(&(bucket.to_owned(), key.to_owned()));
        } else {
            shows.insert(
                (bucket.to_owned(), key.to_owned()),
                Instant::now() + list_lag,
            );
        }
        Ok(meta)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn put(
        &self,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        user: Vec<(String, String)>,
        body: &[u8],
        cond: &Cond,
        list_lag: Duration,
    ) -> Result<Meta, Refused> {
        self.commit_object(bucket, key, None, content_type, user, body, cond, list_lag)
            .await
    }

    pub(crate) async fn delete(&self, bucket: &str, key: &str) -> io::Result<()> {
        let _one = self.commit.lock().await;
        match fs::remove_file(self.object_path(bucket, key)).await {
            Ok(()) => sync_dir(&self.bucket_dir(bucket).join("o")).await,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Every object of the bucket that listings show now, by key. Returns
    /// also how many were left out for a list lag.
    pub(crate) async fn list(&self, bucket: &str) -> io::Result<(Vec<(String, Meta)>, usize)> {
        let mut dir = fs::read_dir(self.bucket_dir(bucket).join("o")).await?;
        let mut all = Vec::new();
        while let Some(entry) = dir.next_entry().await? {
            let Some(key) = entry.file_name().to_str().and_then(decode_key) else {
                continue;
            };
            let bytes = match fs::read(entry.path()).await {
                Ok(b) => b,
                // Deleted since the folder was read.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            all.push((key, parse(Bytes::from(bytes))?.0));
        }
        all.sort_by(|a, b| a.0.cmp(&b.0));
        let now = Instant::now();
        let mut shows = self.shows_at.lock().unwrap_or_else(|e| e.into_inner());
        shows.retain(|_, at| *at > now);
        let before = all.len();
        all.retain(|(k, _)| !shows.contains_key(&(bucket.to_owned(), k.clone())));
        let hidden = before - all.len();
        Ok((all, hidden))
    }

    pub(crate) async fn create_upload(
        &self,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        user: Vec<(String, String)>,
    ) -> io::Result<String> {
        let id = format!("{:x}.{}", now_ms(), self.fresh());
        let dir = self.upload_dir(bucket, &id);
        make_dirs(&dir).await?;
        let target = Meta {
            etag: String::new(),
            size: 0,
            modified_ms: 0,
            content_type,
            user,
        };
        self.install(&dir, "target", &render(&target, key.as_bytes()))
            .await?;
        Ok(id)
    }

    async fn upload_target(&self, bucket: &str, id: &str) -> Result<(Meta, String), Refused> {
        if !valid_upload_id(id) {
            return Err(Refused::NoSuchUpload);
        }
        match fs::read(self.upload_dir(bucket, id).join("target")).await {
            Ok(b) => {
                let (meta, key) = parse(Bytes::from(b))?;
                Ok((meta, String::from_utf8_lossy(&key).into_owned()))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Refused::NoSuchUpload),
            Err(e) => Err(e.into()),
        }
    }

    /// Stores a part; returns its quoted etag.
    pub(crate) async fn put_part(
        &self,
        bucket: &str,
        key: &str,
        id: &str,
        number: u32,
        body: &[u8],
    ) -> Result<String, Refused> {
        let (_, target) = self.upload_target(bucket, id).await?;
        if target != key {
            return Err(Refused::NoSuchUpload);
        }
        if !(1..=10_000).contains(&number) {
            return Err(Refused::BadParts(
                "InvalidArgument",
                format!("part number {number} is not within 1 to 10000"),
            ));
        }
        let meta = Meta {
            etag: format!("\"{}\"", hex(&Md5::digest(body))),
            size: body.len() as u64,
            modified_ms: now_ms(),
            content_type: None,
            user: Vec::new(),
        };
        let dir = self.upload_dir(bucket, id);
        self.install(&dir, &format!("p{number}"), &render(&meta, body))
            .await?;
        Ok(meta.etag)
    }

    /// Joins the listed parts into the object.
    pub(crate) async fn complete(
        &self,
        bucket: &str,
        key: &str,
        id: &str,
        parts: &[(u32, String)],
        cond: &Cond,
        list_lag: Duration,
    ) -> Result<Meta, Refused> {
        let (target, tkey) = self.upload_target(bucket, id).await?;
        if tkey != key {
            return Err(Refused::NoSuchUpload);
        }
        if parts.is_empty() {
            return Err(Refused::BadParts(
                "MalformedXML",
                "a CompleteMultipartUpload lists no part".into(),
            ));
        }
        let dir = self.upload_dir(bucket, id);
        let mut body = Vec::new();
        let mut digests = Vec::new();
        let mut last = 0;
        for (i, (number, etag)) in parts.iter().enumerate() {
            if *number <= last {
                return Err(Refused::BadParts(
                    "InvalidPartOrder",
                    "parts must be listed in ascending order".into(),
                ));
            }
            last = *number;
            let bytes = match fs::read(dir.join(format!("p{number}"))).await {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(Refused::BadParts(
                        "InvalidPart",
                        format!("part {number} was never uploaded"),
                    ))
                }
                Err(e) => return Err(e.into()),
            };
            let (meta, data) = parse(Bytes::from(bytes))?;
            if !same_etag(etag, &meta.etag) {
                return Err(Refused::BadParts(
                    "InvalidPart",
                    format!("part {number} has etag {}, not {etag}", meta.etag),
                ));
            }
            if i + 1 < parts.len() && data.len() < MIN_PART {
                return Err(Refused::BadParts(
                    "EntityTooSmall",
                    format!(
                        "part {number} has {} bytes; every part but the last needs 5 MiB",
                        data.len()
                    ),
                ));
            }
            digests.extend_from_slice(&Md5::digest(&data));
            body.extend_from_slice(&data);
        }
        let etag = format!("\"{}-{}\"", hex(&Md5::digest(&digests)), parts.len());
        let meta = self
            .commit_object(
                bucket,
                key,
                Some(etag),
                target.content_type,
                target.user,
                &body,
                cond,
                list_lag,
            )
            .await?;
        self.abort(bucket, id).await?;
        Ok(meta)
    }

    pub(crate) async fn abort(&self, bucket: &str, id: &str) -> Result<(), Refused> {
        if !valid_upload_id(id) {
            return Err(Refused::NoSuchUpload);
        }
        match fs::remove_dir_all(self.upload_dir(bucket, id)).await {
            Ok(()) => Ok(sync_dir(&self.bucket_dir(bucket).join("u")).await?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Refused::NoSuchUpload),
            Err(e) => Err(e.into()),
        }
    }
}

/// `create_dir_all`, durable: each folder it makes is synced into its
/// parent (a folder made and not synced is lost with everything in it when
/// the machine crashes; the simulated disk found this on the first try).
async fn make_dirs(dir: &Path) -> io::Result<()> {
    if fs::try_exists(dir).await? {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        Box::pin(make_dirs(parent)).await?;
    }
    match fs::create_dir(dir).await {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e),
    }
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent).await,
        _ => Ok(()),
    }
}

async fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir).await?.sync_all().await
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn valid_upload_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'.')
}

/// Etags compare without their quotes (clients send both forms).
pub(crate) fn same_etag(a: &str, b: &str) -> bool {
    a.trim_matches('"') == b.trim_matches('"')
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn render(meta: &Meta, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "sim-s3 1\netag {}\nmodified {}\n",
        meta.etag, meta.modified_ms
    );
    if let Some(ct) = &meta.content_type {
        out.push_str(&format!("type {ct}\n"));
    }
    for (k, v) in &meta.user {
        out.push_str(&format!("meta {k} {v}\n"));
    }
    out.push('\n');
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn parse(bytes: Bytes) -> io::Result<(Meta, Bytes)> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "not an object of sim-s3");
    let end = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .ok_or_else(bad)?;
    let head = std::str::from_utf8(&bytes[..end]).map_err(|_| bad())?;
    let mut lines = head.lines();
    if lines.next() != Some("sim-s3 1") {
        return Err(bad());
    }
    let body = bytes.slice(end + 2..);
    let mut meta = Meta {
        etag: String::new(),
        size: body.len() as u64,
        modified_ms: 0,
        content_type: None,
        user: Vec::new(),
    };
    for line in lines {
        let (field, value) = line.split_once(' ').unwrap_or((line, ""));
        match field {
            "etag" => meta.etag = value.to_owned(),
            "modified" => meta.modified_ms = value.parse().map_err(|_| bad())?,
            "type" => meta.content_type = Some(value.to_owned()),
            "meta" => {
                let (k, v) = value.split_once(' ').unwrap_or((value, ""));
                meta.user.push((k.to_owned(), v.to_owned()));
            }
            _ => return Err(bad()),
        }
    }
    Ok((meta, body))
}

/// A key as a file name (longer than 255 bytes is refused by the caller).
pub(crate) fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for (i, b) in key.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0);
        if plain {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode_key(name: &str) -> Option<String> {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = name.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_file_names() {
        for key in ["a", "log/00001", ".hidden", "a b+c%/é", "x..y"] {
            let name = encode_key(key);
            assert!(!name.contains('/') && !name.starts_with('.'), "{name}");
            assert_eq!(decode_key(&name).as_deref(), Some(key));
        }
    }

    #[test]
    fn an_object_file_keeps_its_header_and_body() {
        let meta = Meta {
            etag: "\"abc\"".into(),
            size: 5,
            modified_ms: 42,
            content_type: Some("text/plain".into()),
            user: vec![("k".into(), "v w".into())],
        };
        let (back, body) = parse(Bytes::from(render(&meta, b"he\n\nl"))).unwrap();
        assert_eq!(back, meta);
        assert_eq!(&body[..], b"he\n\nl");
    }
}
