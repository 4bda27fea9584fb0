//! A log kept in an object store the way object-store-native systems keep
//! theirs: each append writes its record as an object of its own (a
//! segment), then commits it by rewriting one small manifest that lists the
//! committed segments in order. Writers never coordinate with each other:
//! the manifest is fenced by a conditional PUT (`If-Match` on the etag it
//! was read at, `If-None-Match: *` for the first), so of two writers that
//! read the same manifest exactly one commits and the other reads it again.
//!
//! The hard part is the answer that does not come, or comes wrong. A
//! manifest PUT whose reply is lost (a timeout, a reset) may have applied;
//! worse, the S3 client retries it by itself, and the retry is refused
//! with 412 *because the first try applied*: a 412 does not mean that
//! another writer won. The fixed writer looks for its segment in every
//! manifest it reads and, if it is listed, is done. The planted bug
//! ([`Variant::Buggy`]) trusts the answers: its segment is committed twice,
//! a record the log holds twice. (The first "fix" written for this example
//! looked only after an unanswered PUT; the simulation found the 412 case
//! in seed 0.)

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions, UpdateVersion};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The program: the fix, or the planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// A commit refused or unanswered is retried blindly: it may commit
    /// its segment a second time.
    Buggy,
    /// Every attempt first looks for its segment in the manifest.
    Fixed,
}

/// Why an append failed. It may still have been committed (`Unknown`).
#[derive(Debug)]
pub enum Error {
    /// The store did not answer, or failed: the append may be in the log.
    Unknown(object_store::Error),
    /// Ran out of attempts against other writers' commits.
    Contended,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Unknown(e) => write!(f, "the append may or may not be in the log: {e}"),
            Error::Contended => f.write_str("other writers committed first, every time"),
        }
    }
}

impl std::error::Error for Error {}

const MANIFEST: &str = "manifest";
/// Commit attempts before `Contended`.
const ATTEMPTS: usize = 20;

/// One writer of the log.
pub struct Log {
    store: Arc<dyn ObjectStore>,
    writer: String,
    next: AtomicU64,
    variant: Variant,
}

/// The manifest as read: its segments in commit order and its etag (none
/// when there is no manifest yet).
struct Manifest {
    segments: Vec<String>,
    etag: Option<String>,
}

impl Log {
    /// A writer named `writer` (unique among the log's writers: its
    /// segments' names start with it).
    pub fn new(store: Arc<dyn ObjectStore>, writer: &str, variant: Variant) -> Self {
        Self {
            store,
            writer: writer.to_owned(),
            next: AtomicU64::new(0),
            variant,
        }
    }

    async fn manifest(&self) -> object_store::Result<Manifest> {
        match self.store.get(&Path::from(MANIFEST)).await {
            Ok(got) => {
                let etag = got.meta.e_tag.clone();
                let bytes = got.bytes().await?;
                let segments = String::from_utf8_lossy(&bytes)
                    .lines()
                    .map(str::to_owned)
                    .collect();
                Ok(Manifest { segments, etag })
            }
            Err(object_store::Error::NotFound { .. }) => Ok(Manifest {
                segments: Vec::new(),
                etag: None,
            }),
            Err(e) => Err(e),
        }
    }

    /// Appends `record`; returns its position in the log once committed.
    pub async fn append(&self, record: &str) -> Result<usize, Error> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let segment = format!("seg/{}/{n:06}", self.writer);
        // The segment first: idempotent, so the client retries it itself.
        self.store
            .put(
                &Path::from(segment.as_str()),
                Bytes::from(record.to_owned()).into(),
            )
            .await
            .map_err(Error::Unknown)?;
        let mut unanswered = None;
        for _ in 0..ATTEMPTS {
            let manifest = match self.manifest().await {
                Ok(m) => m,
                Err(e) => {
                    unanswered = Some(e);
                    continue;
                }
            };
            if self.variant == Variant::Fixed {
                // An earlier attempt may have committed though it was not
                // told so: its reply lost, or the client's own retry of
                // it refused with 412 because it had applied.
                if let Some(at) = manifest.segments.iter().position(|s| *s == segment) {
                    return Ok(at);
                }
            }
            let at = manifest.segments.len();
            let mut text = manifest.segments.join("\n");
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&segment);
            let mode = match manifest.etag {
                None => PutMode::Create,
                Some(etag) => PutMode::Update(UpdateVersion {
                    e_tag: Some(etag),
                    version: None,
                }),
            };
            let put = self
                .store
                .put_opts(
                    &Path::from(MANIFEST),
                    Bytes::from(text).into(),
                    PutOptions::from(mode),
                )
                .await;
            match put {
                Ok(_) => return Ok(at),
                // Another writer committed first: read again.
                Err(
                    object_store::Error::Precondition { .. }
                    | object_store::Error::AlreadyExists { .. },
                ) => {}
                Err(e) => unanswered = Some(e),
            }
        }
        Err(unanswered.map_or(Error::Contended, Error::Unknown))
    }

    /// The log's records, in order.
    pub async fn read(&self) -> object_store::Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for segment in self.manifest().await?.segments {
            let body = self
                .store
                .get(&Path::from(segment.as_str()))
                .await?
                .bytes()
                .await?;
            out.push((segment, String::from_utf8_lossy(&body).into_owned()));
        }
        Ok(out)
    }
}
