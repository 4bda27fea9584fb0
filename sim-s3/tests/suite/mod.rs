//! One suite, two worlds: each case takes `object_store`'s own S3 client,
//! unmodified, pointed at a sim-s3 server, and the server's fault handle.
//! `tests/loopback.rs` runs it on real Tokio and loopback (`cargo test`),
//! `tests/sim.rs` on the simulation (`cargo sim test`).

#![allow(dead_code)]

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, S3CopyIfNotExists};
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, PutMode, PutOptions,
    PutPayload, RetryConfig, UpdateVersion,
};
use sim_s3::Faults;
use std::time::Duration;

pub const BUCKET: &str = "data";

/// The client as a service would build it, with retries short enough for
/// loopback and a timeout that ends a hang.
pub fn client(endpoint: &str) -> AmazonS3 {
    client_with(endpoint, Duration::from_millis(500), 4)
}

/// A client with its own request timeout and retry count.
pub fn client_with(endpoint: &str, timeout: Duration, retries: usize) -> AmazonS3 {
    AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_virtual_hosted_style_request(false)
        .with_bucket_name(BUCKET)
        .with_region("us-east-1")
        .with_access_key_id("sim")
        .with_secret_access_key("sim")
        .with_copy_if_not_exists(S3CopyIfNotExists::Multipart)
        .with_client_options(
            // (Client options replace the builder's: allow HTTP here.)
            ClientOptions::new()
                .with_allow_http(true)
                .with_timeout(timeout)
                .with_connect_timeout(timeout),
        )
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(10),
                max_backoff: Duration::from_millis(50),
                base: 2.0,
            },
            max_retries: retries,
            retry_timeout: Duration::from_secs(60),
        })
        .build()
        .expect("object_store's S3 client builds")
}

fn p(s: &str) -> Path {
    Path::from(s)
}

async fn text(s3: &AmazonS3, key: &str) -> String {
    let got = s3.get(&p(key)).await.unwrap().bytes().await.unwrap();
    String::from_utf8(got.to_vec()).unwrap()
}

/// PUT, GET whole and by range, HEAD, DELETE.
pub async fn objects(s3: &AmazonS3, _: &Faults) {
    let put = s3.put(&p("a/1"), "hello world".into()).await.unwrap();
    assert_eq!(text(s3, "a/1").await, "hello world");
    let head = s3.head(&p("a/1")).await.unwrap();
    assert_eq!(head.size, 11);
    assert_eq!(head.e_tag, put.e_tag);
    // MD5 of "hello world", as S3 makes single-part ETags.
    assert_eq!(
        head.e_tag.as_deref(),
        Some("\"5eb63bbbe01eeed093cb22bb8f5acdc3\"")
    );
    let r = s3.get_range(&p("a/1"), 6..11).await.unwrap();
    assert_eq!(&r[..], b"world");
    let opts = GetOptions {
        range: Some(GetRange::Suffix(5)),
        ..GetOptions::default()
    };
    let r = s3.get_opts(&p("a/1"), opts).await.unwrap();
    assert_eq!(r.range, 6..11);
    assert_eq!(&r.bytes().await.unwrap()[..], b"world");
    let opts = GetOptions {
        range: Some(GetRange::Offset(100)),
        ..GetOptions::default()
    };
    assert!(
        s3.get_opts(&p("a/1"), opts).await.is_err(),
        "416 out of range"
    );
    // Conditional reads.
    let opts = GetOptions {
        if_none_match: put.e_tag.clone(),
        ..GetOptions::default()
    };
    let e = s3.get_opts(&p("a/1"), opts).await.unwrap_err();
    assert!(
        matches!(e, object_store::Error::NotModified { .. }),
        "{e:?}"
    );
    let opts = GetOptions {
        if_match: Some("\"other\"".into()),
        ..GetOptions::default()
    };
    let e = s3.get_opts(&p("a/1"), opts).await.unwrap_err();
    assert!(
        matches!(e, object_store::Error::Precondition { .. }),
        "{e:?}"
    );
    s3.delete(&p("a/1")).await.unwrap();
    let e = s3.get(&p("a/1")).await.unwrap_err();
    assert!(matches!(e, object_store::Error::NotFound { .. }), "{e:?}");
    // Deleting what is not there is not an error, as in S3.
    s3.delete(&p("a/1")).await.unwrap();
}

/// ListObjectsV2: prefix, delimiter, offset, and bulk delete.
pub async fn listings(s3: &AmazonS3, _: &Faults) {
    for k in ["logs/2/b", "logs/1/a", "logs/1/b", "top", "logs/3"] {
        s3.put(&p(k), Bytes::from(k.to_owned()).into())
            .await
            .unwrap();
    }
    let all: Vec<String> = s3
        .list(Some(&p("logs")))
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all, ["logs/1/a", "logs/1/b", "logs/2/b", "logs/3"]);
    let listed = s3.list_with_delimiter(Some(&p("logs"))).await.unwrap();
    let prefixes: Vec<String> = listed
        .common_prefixes
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(prefixes, ["logs/1", "logs/2"]);
    let objects: Vec<String> = listed
        .objects
        .iter()
        .map(|m| m.location.to_string())
        .collect();
    assert_eq!(objects, ["logs/3"]);
    assert_eq!(listed.objects[0].size, 6);
    let after: Vec<String> = s3
        .list_with_offset(Some(&p("logs")), &p("logs/1/b"))
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(after, ["logs/2/b", "logs/3"]);
    let gone: Vec<Path> = s3
        .delete_stream(futures_util::stream::iter(all.iter().map(|k| Ok(p(k)))).boxed_s())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(gone.len(), 4);
    let left: Vec<String> = s3
        .list(None)
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(left, ["top"]);
}

/// `boxed()` for the delete stream without naming futures' StreamExt.
trait BoxedS<'a, T> {
    fn boxed_s(self) -> futures_util::stream::BoxStream<'a, T>;
}

impl<'a, T, S: futures_util::Stream<Item = T> + Send + 'a> BoxedS<'a, T> for S {
    fn boxed_s(self) -> futures_util::stream::BoxStream<'a, T> {
        Box::pin(self)
    }
}

/// `If-None-Match: *` and `If-Match`: object_store's `PutMode`.
pub async fn conditional_writes(s3: &AmazonS3, _: &Faults) {
    let create = PutOptions::from(PutMode::Create);
    let first = s3
        .put_opts(&p("manifest"), "v1".into(), create.clone())
        .await
        .unwrap();
    let e = s3
        .put_opts(&p("manifest"), "v1'".into(), create)
        .await
        .unwrap_err();
    assert!(
        matches!(e, object_store::Error::AlreadyExists { .. }),
        "{e:?}"
    );
    let update = |etag: Option<String>| {
        PutOptions::from(PutMode::Update(UpdateVersion {
            e_tag: etag,
            version: None,
        }))
    };
    let second = s3
        .put_opts(&p("manifest"), "v2".into(), update(first.e_tag.clone()))
        .await
        .unwrap();
    // The first version's etag is stale now.
    let e = s3
        .put_opts(&p("manifest"), "v2'".into(), update(first.e_tag.clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(e, object_store::Error::Precondition { .. }),
        "{e:?}"
    );
    assert_eq!(text(s3, "manifest").await, "v2");
    assert_ne!(first.e_tag, second.e_tag);
    // If-Match on no object: S3 says 404, object_store a precondition.
    let e = s3
        .put_opts(&p("none"), "x".into(), update(first.e_tag))
        .await
        .unwrap_err();
    assert!(
        matches!(e, object_store::Error::Precondition { .. }),
        "{e:?}"
    );
}

/// Multipart upload (two 5 MiB parts and a short last one), CopyObject,
/// and copy-if-not-exists through UploadPartCopy and a conditional
/// CompleteMultipartUpload.
pub async fn multipart_and_copy(s3: &AmazonS3, _: &Faults) {
    let part = |b: u8| PutPayload::from(vec![b; 5 * 1024 * 1024]);
    let mut upload = s3.put_multipart(&p("big")).await.unwrap();
    upload.put_part(part(1)).await.unwrap();
    upload.put_part(part(2)).await.unwrap();
    upload.put_part("tail".into()).await.unwrap();
    let done = upload.complete().await.unwrap();
    let etag = done.e_tag.unwrap();
    assert!(
        etag.ends_with("-3\""),
        "a multipart etag counts parts: {etag}"
    );
    let got = s3.get(&p("big")).await.unwrap().bytes().await.unwrap();
    assert_eq!(got.len(), 10 * 1024 * 1024 + 4);
    assert!(got[..5 * 1024 * 1024].iter().all(|&b| b == 1));
    assert_eq!(&got[got.len() - 4..], b"tail");
    // An aborted upload leaves nothing.
    let mut upload = s3.put_multipart(&p("aborted")).await.unwrap();
    upload.put_part("x".into()).await.unwrap();
    upload.abort().await.unwrap();
    assert!(s3.head(&p("aborted")).await.is_err());

    s3.put(&p("src"), "copied".into()).await.unwrap();
    s3.copy(&p("src"), &p("dst")).await.unwrap();
    assert_eq!(text(s3, "dst").await, "copied");
    s3.copy_if_not_exists(&p("src"), &p("fresh")).await.unwrap();
    assert_eq!(text(s3, "fresh").await, "copied");
    let e = s3
        .copy_if_not_exists(&p("src"), &p("dst"))
        .await
        .unwrap_err();
    assert!(
        matches!(e, object_store::Error::AlreadyExists { .. }),
        "{e:?}"
    );
}

/// 503 SlowDown and 500: object_store retries, and the write lands once.
pub async fn throttled_and_failing(s3: &AmazonS3, faults: &Faults) {
    faults.slow_down(2);
    s3.put(&p("k"), "v".into()).await.unwrap();
    assert_eq!(faults.seen().slow_down, 2);
    faults.internal_error(1);
    assert_eq!(text(s3, "k").await, "v");
    assert_eq!(faults.seen().internal_error, 1);
    // More failures than the client retries: the caller sees the error.
    faults.slow_down(50);
    let e = s3.get(&p("k")).await.unwrap_err();
    assert!(
        e.to_string().contains("SlowDown") || e.to_string().contains("503"),
        "{e}"
    );
    faults.heal();
}

/// A 409 on a conditional write: object_store retries it (as S3 asks).
pub async fn conflicting(s3: &AmazonS3, faults: &Faults) {
    let first = s3.put(&p("m"), "1".into()).await.unwrap();
    faults.conflict(1);
    let update = PutOptions::from(PutMode::Update(UpdateVersion {
        e_tag: first.e_tag,
        version: None,
    }));
    s3.put_opts(&p("m"), "2".into(), update).await.unwrap();
    assert_eq!(faults.seen().conflict, 1);
    assert_eq!(text(s3, "m").await, "2");
}

/// A reply lost after a conditional create applied: the caller gets an
/// error, though the object is there; retrying it says AlreadyExists.
pub async fn lost_reply(s3: &AmazonS3, faults: &Faults) {
    faults.lose_reply(1);
    let create = PutOptions::from(PutMode::Create);
    let e = s3
        .put_opts(&p("once"), "v".into(), create.clone())
        .await
        .unwrap_err();
    assert_eq!(faults.seen().lose_reply, 1, "{e}");
    assert_eq!(text(s3, "once").await, "v", "the write applied");
    let e = s3
        .put_opts(&p("once"), "v".into(), create)
        .await
        .unwrap_err();
    assert!(
        matches!(e, object_store::Error::AlreadyExists { .. }),
        "{e:?}"
    );
}

/// A GET cut mid-body after half of it.
pub async fn reset_mid_body(s3: &AmazonS3, faults: &Faults) {
    let body = vec![7u8; 64 * 1024];
    s3.put(&p("cut"), body.clone().into()).await.unwrap();
    faults.reset_mid_body(1);
    let got = match s3.get(&p("cut")).await {
        Ok(r) => r.bytes().await,
        Err(e) => Err(e),
    };
    // object_store resumes a body cut short with a ranged GET of the rest:
    // the caller gets it whole (never a short object, silently).
    assert_eq!(&got.unwrap()[..], &body[..]);
    assert_eq!(faults.seen().reset_mid_body, 1);
}

/// A hang: requests time out until healed, then succeed.
pub async fn hang_until_healed(s3: &AmazonS3, faults: &Faults) {
    s3.put(&p("h"), "v".into()).await.unwrap();
    faults.hang();
    let e = s3.get(&p("h")).await.unwrap_err();
    assert!(faults.seen().hung >= 1, "{e}");
    faults.heal();
    assert_eq!(text(s3, "h").await, "v");
}

/// A slow first byte past the client's timeout fails the call; under it,
/// the call succeeds.
pub async fn slow_first_byte(s3: &AmazonS3, faults: &Faults) {
    s3.put(&p("s"), "v".into()).await.unwrap();
    faults.slow_first_byte(Duration::from_millis(100));
    assert_eq!(text(s3, "s").await, "v");
    assert!(faults.seen().slow_first_byte >= 1);
    faults.slow_first_byte(Duration::from_secs(2));
    assert!(s3.get(&p("s")).await.is_err(), "past the 500 ms timeout");
    faults.heal();
}

/// A list lag: a new key is readable at once but listed only later.
pub async fn list_lag(s3: &AmazonS3, faults: &Faults) {
    faults.list_lag(Duration::from_millis(300));
    s3.put(&p("lag/new"), "v".into()).await.unwrap();
    assert_eq!(text(s3, "lag/new").await, "v", "read-after-write holds");
    let listed = s3.list_with_delimiter(Some(&p("lag"))).await.unwrap();
    assert!(listed.objects.is_empty(), "{listed:?}");
    assert_eq!(faults.seen().list_lag, 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let listed = s3.list_with_delimiter(Some(&p("lag"))).await.unwrap();
    assert_eq!(listed.objects.len(), 1);
    faults.heal();
}
