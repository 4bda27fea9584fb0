//! S3's REST API, path-style: routing, headers, conditions, ranges.

use crate::faults::{self, Faults, Kind, Plan};
use crate::store::{encode_key, Cond, Meta, Refused, Store};
use crate::xml;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::SystemTime;

/// A response body: whole, or cut after its first half (then an error,
/// which makes hyper reset the connection).
pub(crate) struct Reply {
    data: Option<Bytes>,
    cut: bool,
}

impl Body for Reply {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if self.cut {
            self.cut = false;
            return Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "sim-s3: reset mid-body (Faults::reset_mid_body)",
            ))));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && !self.cut
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match (&self.data, self.cut) {
            (Some(d), false) => hyper::body::SizeHint::with_exact(d.len() as u64),
            (None, false) => hyper::body::SizeHint::with_exact(0),
            _ => hyper::body::SizeHint::default(),
        }
    }
}

fn reply(data: impl Into<Bytes>) -> Reply {
    Reply {
        data: Some(data.into()),
        cut: false,
    }
}

/// Why a connection ends without a reply.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The request's body did not arrive whole.
    Body(hyper::Error),
    /// A write that applied, its reply dropped on purpose (`lose_reply`).
    LostReply,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Body(e) => write!(f, "sim-s3: the request's body: {e}"),
            Failed::LostReply => {
                f.write_str("sim-s3: reply lost after the write applied (Faults::lose_reply)")
            }
        }
    }
}

impl std::error::Error for Failed {}

pub(crate) struct Api {
    pub store: Store,
    pub faults: Faults,
    pub requests: AtomicU64,
}

type Answer = Response<Reply>;

impl Api {
    fn error(&self, status: StatusCode, code: &str, message: &str, resource: &str) -> Answer {
        let id = self.requests.load(Ordering::Relaxed);
        let mut r = Response::new(reply(xml::error(code, message, resource, id)));
        *r.status_mut() = status;
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        );
        r
    }

    fn refused(&self, why: Refused, resource: &str) -> Answer {
        match why {
            Refused::Precondition => self.error(
                StatusCode::PRECONDITION_FAILED,
                "PreconditionFailed",
                "At least one of the pre-conditions you specified did not hold",
                resource,
            ),
            Refused::NoSuchKey => self.error(
                StatusCode::NOT_FOUND,
                "NoSuchKey",
                "The specified key does not exist.",
                resource,
            ),
            Refused::NoSuchUpload => self.error(
                StatusCode::NOT_FOUND,
                "NoSuchUpload",
                "The specified multipart upload does not exist.",
                resource,
            ),
            Refused::BadParts(code, message) => {
                self.error(StatusCode::BAD_REQUEST, code, &message, resource)
            }
            Refused::Io(e) => self.error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                &format!("the node's disk failed: {e}"),
                resource,
            ),
        }
    }

    pub(crate) async fn handle(&self, req: Request<Incoming>) -> Result<Answer, Failed> {
        let id = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        self.faults.pass_hang().await;
        let (parts, body) = req.into_parts();
        let path = parts.uri.path().to_owned();
        let query = parse_query(parts.uri.query().unwrap_or(""));
        let (bucket, key) = split_path(&path);
        let kind = match (&parts.method, key.is_some()) {
            (&Method::GET, true) => Kind::Read,
            (&Method::PUT | &Method::DELETE | &Method::POST, _) => Kind::Write,
            _ => Kind::Other,
        };
        let conditional = parts.headers.contains_key(header::IF_MATCH)
            || parts.headers.contains_key(header::IF_NONE_MATCH);
        let plan = self
            .faults
            .plan(kind, conditional && parts.method != Method::GET);
        note(&parts.method, &path, &plan);
        if !plan.first_byte.is_zero() {
            tokio::time::sleep(plan.first_byte).await;
        }
        let mut body = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return Err(Failed::Body(e)),
        };
        if crate::chunked::is_chunked(&parts.headers) {
            body = match crate::chunked::decode(&body) {
                Ok(b) => b,
                Err(e) => {
                    return Ok(self.error(
                        StatusCode::BAD_REQUEST,
                        "IncompleteBody",
                        &format!("the aws-chunked body is malformed: {e}"),
                        &path,
                    ))
                }
            };
            let declared = parts
                .headers
                .get("x-amz-decoded-content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<usize>().ok());
            if declared.is_some_and(|n| n != body.len()) {
                return Ok(self.error(
                    StatusCode::BAD_REQUEST,
                    "IncompleteBody",
                    "the aws-chunked body's length is not x-amz-decoded-content-length",
                    &path,
                ));
            }
        }
        let mut answer = match plan.error {
            Some(faults::Error::SlowDown) => self.error(
                StatusCode::SERVICE_UNAVAILABLE,
                "SlowDown",
                "Please reduce your request rate.",
                &path,
            ),
            Some(faults::Error::Internal) => self.error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                "We encountered an internal error. Please try again.",
                &path,
            ),
            None => {
                let req = Req {
                    method: &parts.method,
                    headers: &parts.headers,
                    query: &query,
                    path: &path,
                    body,
                    plan,
                };
                self.route(bucket, key, req).await
            }
        };
        if plan.lose_reply && plan.error.is_none() {
            return Err(Failed::LostReply);
        }
        let h = answer.headers_mut();
        h.insert("x-amz-request-id", HeaderValue::from(id));
        h.insert(header::SERVER, HeaderValue::from_static("sim-s3"));
        Ok(answer)
    }

    async fn route(&self, bucket: Option<String>, key: Option<String>, req: Req<'_>) -> Answer {
        let Some(bucket) = bucket else {
            return self.error(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                "sim-s3 serves path-style requests (/bucket/key); set the client's path-style \
                 addressing (object_store: with_virtual_hosted_style_request(false); \
                 aws-sdk-s3: force_path_style(true))",
                req.path,
            );
        };
        let Some(key) = key else {
            return self.bucket_call(&bucket, req).await;
        };
        if encode_key(&key).len() > 255 {
            return self.error(
                StatusCode::BAD_REQUEST,
                "KeyTooLongError",
                "sim-s3 keeps keys as file names: at most 255 bytes once every byte but \
                 [A-Za-z0-9._-] is written as %XX",
                req.path,
            );
        }
        match self.store.bucket_exists(&bucket).await {
            Ok(true) => {}
            Ok(false) => return self.no_bucket(&bucket),
            Err(e) => return self.refused(Refused::Io(e), req.path),
        }
        let q = |name: &str| req.query.get(name).map(String::as_str);
        match (req.method.clone(), q("uploadId"), q("uploads").is_some()) {
            (Method::POST, None, true) => self.initiate(&bucket, &key, &req).await,
            (Method::PUT, Some(id), _) => self.upload_part(&bucket, &key, id, &req).await,
            (Method::POST, Some(id), _) => self.complete(&bucket, &key, id, &req).await,
            (Method::DELETE, Some(id), _) => match self.store.abort(&bucket, id).await {
                Ok(()) => status(StatusCode::NO_CONTENT),
                Err(e) => self.refused(e, req.path),
            },
            (Method::PUT, None, _) if req.headers.contains_key("x-amz-copy-source") => {
                self.copy(&bucket, &key, &req).await
            }
            (Method::PUT, None, _) => self.put(&bucket, &key, &req).await,
            (Method::GET | Method::HEAD, None, _) => self.get(&bucket, &key, &req).await,
            (Method::DELETE, None, _) => match self.store.delete(&bucket, &key).await {
                Ok(()) => status(StatusCode::NO_CONTENT),
                Err(e) => self.refused(Refused::Io(e), req.path),
            },
            _ => self.error(
                StatusCode::NOT_IMPLEMENTED,
                "NotImplemented",
                &format!("sim-s3 does not serve {} on an object", req.method),
                req.path,
            ),
        }
    }

    fn no_bucket(&self, bucket: &str) -> Answer {
        self.error(
            StatusCode::NOT_FOUND,
            "NoSuchBucket",
            "The specified bucket does not exist (create it with S3::bucket or a PUT /bucket)",
            &format!("/{bucket}"),
        )
    }

    async fn bucket_call(&self, bucket: &str, req: Req<'_>) -> Answer {
        if !valid_bucket(bucket) {
            return self.error(
                StatusCode::BAD_REQUEST,
                "InvalidBucketName",
                "bucket names have 3 to 63 of [a-z0-9.-]",
                req.path,
            );
        }
        if *req.method == Method::PUT {
            return match self.store.create_bucket(bucket).await {
                Ok(()) => status(StatusCode::OK),
                Err(e) => self.refused(Refused::Io(e), req.path),
            };
        }
        match self.store.bucket_exists(bucket).await {
            Ok(true) => {}
            Ok(false) => return self.no_bucket(bucket),
            Err(e) => return self.refused(Refused::Io(e), req.path),
        }
        match *req.method {
            Method::HEAD => status(StatusCode::OK),
            Method::GET => self.list(bucket, &req).await,
            Method::POST if req.query.contains_key("delete") => {
                let (keys, quiet) = match xml::delete_keys(&req.body) {
                    Ok(k) => k,
                    Err(e) => {
                        return self.error(StatusCode::BAD_REQUEST, "MalformedXML", &e, req.path)
                    }
                };
                for k in &keys {
                    if let Err(e) = self.store.delete(bucket, k).await {
                        return self.refused(Refused::Io(e), req.path);
                    }
                }
                xml_answer(StatusCode::OK, xml::deleted(&keys, quiet))
            }
            _ => self.error(
                StatusCode::NOT_IMPLEMENTED,
                "NotImplemented",
                &format!("sim-s3 does not serve {} on a bucket", req.method),
                req.path,
            ),
        }
    }

    async fn list(&self, bucket: &str, req: &Req<'_>) -> Answer {
        let q = |name: &str| req.query.get(name).map(String::as_str);
        let prefix = q("prefix").unwrap_or("");
        let delimiter = q("delimiter").filter(|d| !d.is_empty());
        let max_keys = match q("max-keys").map(str::parse::<usize>) {
            None => 1000,
            Some(Ok(n)) => n.min(1000),
            Some(Err(_)) => {
                return self.error(
                    StatusCode::BAD_REQUEST,
                    "InvalidArgument",
                    "max-keys is not a number",
                    req.path,
                )
            }
        };
        let token = q("continuation-token");
        // The token is the hex of the last key or prefix already listed.
        let after = match token {
            Some(t) => match unhex(t) {
                Some(k) => Some(k),
                None => {
                    return self.error(
                        StatusCode::BAD_REQUEST,
                        "InvalidArgument",
                        "The continuation token provided is incorrect",
                        req.path,
                    )
                }
            },
            None => q("start-after").map(str::to_owned),
        };
        let (all, hidden) = match self.store.list(bucket).await {
            Ok(l) => l,
            Err(e) => return self.refused(Refused::Io(e), req.path),
        };
        if hidden > 0 {
            self.faults.saw_list_lag();
        }
        let mut contents: Vec<&(String, Meta)> = Vec::new();
        let mut prefixes: Vec<String> = Vec::new();
        let mut last = None;
        let mut truncated = false;
        for entry in &all {
            let key = &entry.0;
            if !key.starts_with(prefix) || after.as_deref().is_some_and(|a| key.as_str() <= a) {
                continue;
            }
            let common = delimiter.and_then(|d| {
                key[prefix.len()..]
                    .find(d)
                    .map(|i| key[..prefix.len() + i + d.len()].to_owned())
            });
            if let Some(p) = &common {
                if prefixes.last() == Some(p) || after.as_deref().is_some_and(|a| p.as_str() <= a) {
                    continue;
                }
            }
            if contents.len() + prefixes.len() == max_keys {
                truncated = true;
                break;
            }
            match common {
                Some(p) => {
                    last = Some(p.clone());
                    prefixes.push(p);
                }
                None => {
                    last = Some(key.clone());
                    contents.push(entry);
                }
            }
        }
        let page = xml::ListPage {
            bucket,
            prefix,
            delimiter,
            max_keys,
            start_after: q("start-after"),
            token,
            next_token: if truncated {
                last.map(|l| crate::store::hex(l.as_bytes()))
            } else {
                None
            },
            contents: contents
                .iter()
                .map(|(k, m)| xml::Listed {
                    key: k,
                    size: m.size,
                    etag: &m.etag,
                    modified: iso(m.modified()),
                })
                .collect(),
            prefixes,
        };
        xml_answer(StatusCode::OK, xml::list(&page))
    }

    async fn put(&self, bucket: &str, key: &str, req: &Req<'_>) -> Answer {
        let cond = match write_cond(req.headers) {
            Ok(c) => c,
            Err(a) => {
                return self.error(StatusCode::NOT_IMPLEMENTED, "NotImplemented", a, req.path)
            }
        };
        if cond != Cond::None && self.faults.take_conflict() {
            return self.conflict(req.path);
        }
        let (ct, user) = object_headers(req.headers);
        let lag = self.faults.list_lag_now();
        match self
            .store
            .put(bucket, key, ct, user, &req.body, &cond, lag)
            .await
        {
            Ok(meta) => {
                let mut r = status(StatusCode::OK);
                r.headers_mut().insert(header::ETAG, value(&meta.etag));
                r
            }
            Err(e) => self.refused(e, req.path),
        }
    }

    fn conflict(&self, path: &str) -> Answer {
        tracing::info!(target: "sim_s3", "fault: 409 ConditionalRequestConflict for {path}");
        self.error(
            StatusCode::CONFLICT,
            "ConditionalRequestConflict",
            "A conflicting conditional operation is currently in progress against this \
             resource. Please try again.",
            path,
        )
    }

    /// The source of a copy: `/bucket/key` or `bucket/key`, percent-encoded.
    async fn source(&self, req: &Req<'_>) -> Result<(Meta, Bytes), Answer> {
        let raw = req
            .headers
            .get("x-amz-copy-source")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let raw = raw.split('?').next().unwrap_or(raw);
        let decoded = percent_decode(raw.trim_start_matches('/'), false);
        let Some((b, k)) = decoded.split_once('/') else {
            return Err(self.error(
                StatusCode::BAD_REQUEST,
                "InvalidArgument",
                "x-amz-copy-source is not bucket/key",
                req.path,
            ));
        };
        match self.store.get(b, k).await {
            Ok(Some(found)) => Ok(found),
            Ok(None) => Err(self.refused(Refused::NoSuchKey, &format!("/{b}/{k}"))),
            Err(e) => Err(self.refused(Refused::Io(e), req.path)),
        }
    }

    async fn copy(&self, bucket: &str, key: &str, req: &Req<'_>) -> Answer {
        let (meta, data) = match self.source(req).await {
            Ok(s) => s,
            Err(a) => return a,
        };
        let cond = match write_cond(req.headers) {
            Ok(c) => c,
            Err(a) => {
                return self.error(StatusCode::NOT_IMPLEMENTED, "NotImplemented", a, req.path)
            }
        };
        let replace = req
            .headers
            .get("x-amz-metadata-directive")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"REPLACE"));
        let (ct, user) = if replace {
            object_headers(req.headers)
        } else {
            (meta.content_type, meta.user)
        };
        let lag = self.faults.list_lag_now();
        match self
            .store
            .put(bucket, key, ct, user, &data, &cond, lag)
            .await
        {
            Ok(m) => xml_answer(
                StatusCode::OK,
                xml::copied(false, &m.etag, &iso(m.modified())),
            ),
            Err(e) => self.refused(e, req.path),
        }
    }

    async fn initiate(&self, bucket: &str, key: &str, req: &Req<'_>) -> Answer {
        let (ct, user) = object_headers(req.headers);
        match self.store.create_upload(bucket, key, ct, user).await {
            Ok(id) => xml_answer(StatusCode::OK, xml::initiated(bucket, key, &id)),
            Err(e) => self.refused(Refused::Io(e), req.path),
        }
    }

    async fn upload_part(&self, bucket: &str, key: &str, id: &str, req: &Req<'_>) -> Answer {
        let Some(number) = req.query.get("partNumber").and_then(|n| n.parse().ok()) else {
            return self.error(
                StatusCode::BAD_REQUEST,
                "InvalidArgument",
                "partNumber is missing or not a number",
                req.path,
            );
        };
        let copy = req.headers.contains_key("x-amz-copy-source");
        let data = if copy {
            match self.source(req).await {
                Ok((_, data)) => data,
                Err(a) => return a,
            }
        } else {
            req.body.clone()
        };
        match self.store.put_part(bucket, key, id, number, &data).await {
            Ok(etag) if copy => xml_answer(
                StatusCode::OK,
                xml::copied(true, &etag, &iso(SystemTime::now())),
            ),
            Ok(etag) => {
                let mut r = status(StatusCode::OK);
                r.headers_mut().insert(header::ETAG, value(&etag));
                r
            }
            Err(e) => self.refused(e, req.path),
        }
    }

    async fn complete(&self, bucket: &str, key: &str, id: &str, req: &Req<'_>) -> Answer {
        let parts = match xml::parts(&req.body) {
            Ok(p) => p,
            Err(e) => return self.error(StatusCode::BAD_REQUEST, "MalformedXML", &e, req.path),
        };
        let cond = match write_cond(req.headers) {
            Ok(c) => c,
            Err(a) => {
                return self.error(StatusCode::NOT_IMPLEMENTED, "NotImplemented", a, req.path)
            }
        };
        if cond != Cond::None && self.faults.take_conflict() {
            return self.conflict(req.path);
        }
        let lag = self.faults.list_lag_now();
        match self
            .store
            .complete(bucket, key, id, &parts, &cond, lag)
            .await
        {
            Ok(meta) => xml_answer(StatusCode::OK, xml::completed(bucket, key, &meta.etag)),
            Err(e) => self.refused(e, req.path),
        }
    }

    async fn get(&self, bucket: &str, key: &str, req: &Req<'_>) -> Answer {
        let (meta, data) = match self.store.get(bucket, key).await {
            Ok(Some(found)) => found,
            Ok(None) => return self.refused(Refused::NoSuchKey, req.path),
            Err(e) => return self.refused(Refused::Io(e), req.path),
        };
        if let Some(a) = self.read_conditions(&meta, req) {
            return a;
        }
        let total = data.len() as u64;
        let range = match req.headers.get(header::RANGE).map(|v| v.to_str()) {
            None => None,
            Some(Ok(r)) => match parse_range(r, total) {
                Ok(r) => r,
                Err(()) => {
                    let mut a = self.error(
                        StatusCode::RANGE_NOT_SATISFIABLE,
                        "InvalidRange",
                        "The requested range is not satisfiable",
                        req.path,
                    );
                    a.headers_mut()
                        .insert(header::CONTENT_RANGE, value(&format!("bytes */{total}")));
                    return a;
                }
            },
            Some(Err(_)) => None,
        };
        let (code, body) = match range {
            Some((a, b)) => (
                StatusCode::PARTIAL_CONTENT,
                data.slice(a as usize..=b as usize),
            ),
            None => (StatusCode::OK, data),
        };
        let len = body.len();
        let head = *req.method == Method::HEAD;
        let mut r = if head {
            Response::new(Reply {
                data: None,
                cut: false,
            })
        } else if req.plan.reset_mid_body {
            Reply {
                data: Some(body.slice(..len / 2)),
                cut: true,
            }
            .into_response()
        } else {
            Response::new(reply(body))
        };
        *r.status_mut() = code;
        let h = r.headers_mut();
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
        h.insert(header::ETAG, value(&meta.etag));
        h.insert(
            header::LAST_MODIFIED,
            value(&httpdate::fmt_http_date(meta.modified())),
        );
        h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        if let Some((a, b)) = range {
            h.insert(
                header::CONTENT_RANGE,
                value(&format!("bytes {a}-{b}/{total}")),
            );
        }
        if let Some(ct) = &meta.content_type {
            h.insert(header::CONTENT_TYPE, value(ct));
        }
        for (k, v) in &meta.user {
            if let (Ok(name), Ok(v)) = (
                header::HeaderName::try_from(format!("x-amz-meta-{k}")),
                HeaderValue::from_str(v),
            ) {
                h.insert(name, v);
            }
        }
        r
    }

    /// If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since on a
    /// read, in S3's order.
    fn read_conditions(&self, meta: &Meta, req: &Req<'_>) -> Option<Answer> {
        let text = |h| {
            req.headers
                .get(h)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        let date = |h| text(h).and_then(|v| httpdate::parse_http_date(v).ok());
        let modified = meta.modified();
        let etag_in = |list: &str| {
            list.split(',')
                .any(|t| t.trim() == "*" || crate::store::same_etag(t.trim(), &meta.etag))
        };
        let if_match = text(header::IF_MATCH);
        if let Some(m) = if_match {
            if !etag_in(m) {
                return Some(self.refused(Refused::Precondition, req.path));
            }
        } else if let Some(d) = date(header::IF_UNMODIFIED_SINCE) {
            if secs(modified) > secs(d) {
                return Some(self.refused(Refused::Precondition, req.path));
            }
        }
        let not_modified = || {
            let mut r = status(StatusCode::NOT_MODIFIED);
            r.headers_mut().insert(header::ETAG, value(&meta.etag));
            r
        };
        if let Some(m) = text(header::IF_NONE_MATCH) {
            if etag_in(m) {
                return Some(not_modified());
            }
        } else if let Some(d) = date(header::IF_MODIFIED_SINCE) {
            if secs(modified) <= secs(d) {
                return Some(not_modified());
            }
        }
        None
    }
}

impl Reply {
    fn into_response(self) -> Answer {
        Response::new(self)
    }
}

struct Req<'a> {
    method: &'a Method,
    headers: &'a HeaderMap,
    query: &'a BTreeMap<String, String>,
    path: &'a str,
    body: Bytes,
    plan: Plan,
}

/// A fault served, in the trace (target `sim_s3`): the failing seed's
/// story says which request met which fault.
fn note(method: &Method, path: &str, plan: &Plan) {
    let what = match (plan.error, plan.reset_mid_body, plan.lose_reply) {
        (Some(faults::Error::SlowDown), ..) => "503 SlowDown",
        (Some(faults::Error::Internal), ..) => "500 InternalError",
        (None, true, _) => "reset mid-body",
        (None, _, true) => "reply lost after the write",
        _ => "",
    };
    if !what.is_empty() {
        tracing::info!(target: "sim_s3", "fault: {what} for {method} {path}");
    }
    if !plan.first_byte.is_zero() {
        tracing::info!(
            target: "sim_s3",
            "fault: first byte after {:?} for {method} {path}",
            plan.first_byte
        );
    }
}

fn status(code: StatusCode) -> Answer {
    let mut r = Response::new(reply(Bytes::new()));
    *r.status_mut() = code;
    r
}

fn xml_answer(code: StatusCode, body: String) -> Answer {
    let mut r = Response::new(reply(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    r
}

fn value(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

fn secs(t: SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// S3's listing time: `2026-12-05T19:30:00.123Z`.
fn iso(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

fn write_cond(headers: &HeaderMap) -> Result<Cond, &'static str> {
    let text = |h| headers.get(h).and_then(|v: &HeaderValue| v.to_str().ok());
    match (text(header::IF_NONE_MATCH), text(header::IF_MATCH)) {
        (Some(_), Some(_)) => Err("sim-s3 takes If-Match or If-None-Match on a write, not both"),
        (Some("*"), None) => Ok(Cond::Absent),
        (Some(_), None) => Err("S3 takes only If-None-Match: * on a write"),
        (None, Some(etag)) => Ok(Cond::Matches(etag.trim().to_owned())),
        (None, None) => Ok(Cond::None),
    }
}

/// Content-Type and the `x-amz-meta-*` headers.
fn object_headers(headers: &HeaderMap) -> (Option<String>, Vec<(String, String)>) {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let user = headers
        .iter()
        .filter_map(|(k, v)| {
            let name = k.as_str().strip_prefix("x-amz-meta-")?;
            Some((name.to_owned(), v.to_str().ok()?.to_owned()))
        })
        .collect();
    (ct, user)
}

/// `bytes=a-b`, `bytes=a-`, `bytes=-n` → inclusive bounds. `Ok(None)` for
/// a form S3 ignores (several ranges); `Err` for one out of the object.
fn parse_range(r: &str, total: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(spec) = r.strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((a, b)) = spec.split_once('-') else {
        return Ok(None);
    };
    let (a, b) = (a.trim(), b.trim());
    let bounds = match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) if a <= b => (a, b.min(total.saturating_sub(1))),
        (Ok(a), Err(_)) if b.is_empty() => (a, total.saturating_sub(1)),
        (Err(_), Ok(n)) if a.is_empty() && n > 0 => {
            (total.saturating_sub(n), total.saturating_sub(1))
        }
        _ => return Ok(None),
    };
    if bounds.0 >= total {
        return Err(());
    }
    Ok(Some(bounds))
}

fn valid_bucket(b: &str) -> bool {
    (3..=63).contains(&b.len())
        && b.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
}

/// `/bucket/key…` (percent-decoded) → (bucket, key).
fn split_path(path: &str) -> (Option<String>, Option<String>) {
    let path = path.strip_prefix('/').unwrap_or(path);
    if path.is_empty() {
        return (None, None);
    }
    match path.split_once('/') {
        None => (Some(percent_decode(path, false)), None),
        Some((b, "")) => (Some(percent_decode(b, false)), None),
        Some((b, k)) => (
            Some(percent_decode(b, false)),
            Some(percent_decode(k, false)),
        ),
    }
}

fn parse_query(q: &str) -> BTreeMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// `%XX` escapes (and `+` as a space in a query).
fn percent_decode(s: &str, plus: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                match s
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' if plus => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_as_s3_reads_them() {
        assert_eq!(parse_range("bytes=0-3", 10), Ok(Some((0, 3))));
        assert_eq!(parse_range("bytes=4-", 10), Ok(Some((4, 9))));
        assert_eq!(parse_range("bytes=-3", 10), Ok(Some((7, 9))));
        assert_eq!(parse_range("bytes=5-100", 10), Ok(Some((5, 9))));
        assert_eq!(parse_range("bytes=10-", 10), Err(()));
        assert_eq!(parse_range("bytes=0-1,3-4", 10), Ok(None));
    }

    #[test]
    fn paths_and_queries_decode() {
        assert_eq!(
            split_path("/b/a%20b/c+d"),
            (Some("b".into()), Some("a b/c+d".into()))
        );
        assert_eq!(split_path("/b/"), (Some("b".into()), None));
        let q = parse_query("list-type=2&prefix=a+b%2F&uploads");
        assert_eq!(q["prefix"], "a b/");
        assert_eq!(q["uploads"], "");
    }
}
