//! aws-sdk-s3's own calls against sim-s3, one suite for loopback
//! (`tests/loopback.rs`) and the simulation (`tests/sim.rs`).

#![allow(dead_code)]

use aws_sdk_s3::config::{Credentials, Region};
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, Delete, ObjectIdentifier};
use aws_sdk_s3::Client;
use sim_s3::Faults;

pub const BUCKET: &str = "data";

/// The SDK's client as a service builds it for a custom endpoint: path
/// style forced, static credentials, its default checksums (CRC32 trailers
/// in aws-chunked bodies) and retries left as they are.
pub fn client(endpoint: &str) -> Client {
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version_latest()
        .endpoint_url(endpoint)
        .force_path_style(true)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("sim", "sim", None, None, "static"))
        .build();
    Client::from_conf(conf)
}

async fn text(s3: &Client, key: &str) -> String {
    let got = s3
        .get_object()
        .bucket(BUCKET)
        .key(key)
        .send()
        .await
        .unwrap();
    let bytes = got.body.collect().await.unwrap().into_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn code<E: ProvideErrorMetadata>(e: &E) -> String {
    e.code().unwrap_or("(no code)").to_owned()
}

pub async fn objects(s3: &Client, _: &Faults) {
    let put = s3
        .put_object()
        .bucket(BUCKET)
        .key("a/1")
        .body(ByteStream::from_static(b"hello world"))
        .content_type("text/plain")
        .metadata("owner", "ada")
        .send()
        .await
        .unwrap();
    assert_eq!(put.e_tag(), Some("\"5eb63bbbe01eeed093cb22bb8f5acdc3\""));
    assert_eq!(text(s3, "a/1").await, "hello world", "aws-chunked decoded");
    let head = s3
        .head_object()
        .bucket(BUCKET)
        .key("a/1")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_length(), Some(11));
    assert_eq!(head.content_type(), Some("text/plain"));
    assert_eq!(
        head.metadata()
            .and_then(|m| m.get("owner"))
            .map(String::as_str),
        Some("ada")
    );
    let part = s3
        .get_object()
        .bucket(BUCKET)
        .key("a/1")
        .range("bytes=6-")
        .send()
        .await
        .unwrap();
    assert_eq!(part.content_range(), Some("bytes 6-10/11"));
    assert_eq!(
        &part.body.collect().await.unwrap().into_bytes()[..],
        b"world"
    );
    s3.delete_object()
        .bucket(BUCKET)
        .key("a/1")
        .send()
        .await
        .unwrap();
    let e = s3
        .get_object()
        .bucket(BUCKET)
        .key("a/1")
        .send()
        .await
        .unwrap_err();
    assert!(e.into_service_error().is_no_such_key());
}

pub async fn listings(s3: &Client, _: &Faults) {
    for k in ["logs/2/b", "logs/1/a", "logs/1/b", "top", "logs/3"] {
        s3.put_object()
            .bucket(BUCKET)
            .key(k)
            .body(ByteStream::from(k.as_bytes().to_vec()))
            .send()
            .await
            .unwrap();
    }
    // Pages of two, by continuation token.
    let mut keys = Vec::new();
    let mut pages = s3
        .list_objects_v2()
        .bucket(BUCKET)
        .prefix("logs/")
        .max_keys(2)
        .into_paginator()
        .send();
    let mut n = 0;
    while let Some(page) = pages.next().await {
        let page = page.unwrap();
        n += 1;
        keys.extend(
            page.contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_owned)),
        );
    }
    assert_eq!(n, 2);
    assert_eq!(keys, ["logs/1/a", "logs/1/b", "logs/2/b", "logs/3"]);
    let listed = s3
        .list_objects_v2()
        .bucket(BUCKET)
        .prefix("logs/")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    let prefixes: Vec<&str> = listed
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(prefixes, ["logs/1/", "logs/2/"]);
    assert_eq!(listed.contents().len(), 1);
    let objects: Vec<ObjectIdentifier> = keys
        .iter()
        .map(|k| ObjectIdentifier::builder().key(k).build().unwrap())
        .collect();
    let deleted = s3
        .delete_objects()
        .bucket(BUCKET)
        .delete(
            Delete::builder()
                .set_objects(Some(objects))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.deleted().len(), 4);
    let left = s3.list_objects_v2().bucket(BUCKET).send().await.unwrap();
    assert_eq!(left.key_count(), Some(1));
}

pub async fn conditional_writes(s3: &Client, _: &Faults) {
    let put = |body: &'static str| {
        s3.put_object()
            .bucket(BUCKET)
            .key("manifest")
            .body(ByteStream::from_static(body.as_bytes()))
    };
    let first = put("v1").if_none_match("*").send().await.unwrap();
    let e = put("v1'").if_none_match("*").send().await.unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed");
    let etag = first.e_tag().unwrap().to_owned();
    put("v2").if_match(&etag).send().await.unwrap();
    let e = put("v3").if_match(&etag).send().await.unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed", "the first etag is stale");
    assert_eq!(text(s3, "manifest").await, "v2");
}

pub async fn multipart_and_copy(s3: &Client, _: &Faults) {
    let upload = s3
        .create_multipart_upload()
        .bucket(BUCKET)
        .key("big")
        .send()
        .await
        .unwrap();
    let id = upload.upload_id().unwrap();
    let mut parts = Vec::new();
    for (n, body) in [(1, vec![1u8; 5 * 1024 * 1024]), (2, b"tail".to_vec())] {
        let part = s3
            .upload_part()
            .bucket(BUCKET)
            .key("big")
            .upload_id(id)
            .part_number(n)
            .body(ByteStream::from(body))
            .send()
            .await
            .unwrap();
        parts.push(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(part.e_tag().unwrap())
                .build(),
        );
    }
    let done = s3
        .complete_multipart_upload()
        .bucket(BUCKET)
        .key("big")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert!(done.e_tag().unwrap().ends_with("-2\""));
    let head = s3
        .head_object()
        .bucket(BUCKET)
        .key("big")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_length(), Some(5 * 1024 * 1024 + 4));
    s3.copy_object()
        .bucket(BUCKET)
        .key("copy")
        .copy_source(format!("{BUCKET}/big"))
        .send()
        .await
        .unwrap();
    let head = s3
        .head_object()
        .bucket(BUCKET)
        .key("copy")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_length(), Some(5 * 1024 * 1024 + 4));
}

/// 503 SlowDown: the SDK's standard retry absorbs two; a 500 too.
pub async fn throttled(s3: &Client, faults: &Faults) {
    faults.slow_down(2);
    s3.put_object()
        .bucket(BUCKET)
        .key("k")
        .body(ByteStream::from_static(b"v"))
        .send()
        .await
        .unwrap();
    assert_eq!(faults.seen().slow_down, 2);
    faults.internal_error(1);
    assert_eq!(text(s3, "k").await, "v");
    assert_eq!(faults.seen().internal_error, 1);
    // More than its three attempts: the caller sees SlowDown.
    faults.slow_down(10);
    let e = s3
        .get_object()
        .bucket(BUCKET)
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "SlowDown");
    faults.heal();
}

/// A streaming upload from a file: the SDK sends it aws-chunked with a
/// trailing CRC32 (its default checksum), which the store decodes.
pub async fn streaming_upload(s3: &Client, _: &Faults) {
    let dir = std::env::temp_dir().join(format!("sim-s3-sdk-{}", std::process::id()));
    tokio::fs::create_dir_all(&dir).await.unwrap();
    let file = dir.join("upload");
    let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    tokio::fs::write(&file, &body).await.unwrap();
    let stream = ByteStream::from_path(&file).await.unwrap();
    s3.put_object()
        .bucket(BUCKET)
        .key("streamed")
        .body(stream)
        .send()
        .await
        .unwrap();
    let got = s3
        .get_object()
        .bucket(BUCKET)
        .key("streamed")
        .send()
        .await
        .unwrap();
    assert_eq!(got.content_length(), Some(body.len() as i64));
    assert!(got.body.collect().await.unwrap().into_bytes()[..] == body[..]);
    tokio::fs::remove_dir_all(&dir).await.unwrap();
}
