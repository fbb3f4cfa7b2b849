//! A deliberately tiny HTTP/1.1 client over `tokio::net::TcpStream` and an SSE
//! frame splitter, so the kit's own tests see exactly the bytes on the wire
//! (including truncated streams and stalls) without depending on agentbus or
//! a TLS-configured HTTP client.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Upper bound for anything a test waits on; reaching it fails the test.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Awaits `future`, failing the test if it takes longer than [`PATIENCE`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// Whether the body ended properly (last chunk / full content-length).
    pub complete: bool,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("UTF-8 body")
    }

    pub fn frames(&self) -> Vec<Frame> {
        frames(&self.text())
    }
}

/// One SSE frame: its `event:` (if any) and its `data:` lines joined.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub event: Option<String>,
    pub data: String,
}

impl Frame {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|error| panic!("frame data is not JSON ({error}): {}", self.data))
    }
}

/// Splits an SSE body into frames; every frame must end with a blank line.
pub fn frames(body: &str) -> Vec<Frame> {
    assert!(
        body.is_empty() || body.ends_with("\n\n"),
        "stream does not end with a blank line: {body:?}"
    );
    body.split_terminator("\n\n")
        .map(|block| {
            let mut frame = Frame {
                event: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(event) = line.strip_prefix("event: ") {
                    frame.event = Some(event.to_owned());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    if !frame.data.is_empty() {
                        frame.data.push('\n');
                    }
                    frame.data.push_str(data);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            frame
        })
        .collect()
}

/// Opens a connection and sends one request (`Connection: close`).
pub async fn send_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        head.push_str("content-type: application/json\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream.write_all(body).await.expect("write body");
    stream
}

/// Sends a request and reads the whole reply, until the server closes.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = send_request(addr, method, path, headers, body).await;
    let mut raw = Vec::new();
    // A reset after an aborted stream still leaves what was read in `raw`.
    let _ = within("the reply", stream.read_to_end(&mut raw)).await;
    parse(&raw).expect("a complete response head")
}

/// POSTs a JSON body and reads the whole reply.
pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> Reply {
    request(addr, "POST", path, &[], body.to_string().as_bytes()).await
}

/// Reads from `stream` until the de-chunked body holds at least `n` SSE
/// frames; returns the reply so far.
pub async fn read_frames(stream: &mut TcpStream, n: usize) -> Reply {
    let mut raw = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        if let Some(reply) = parse(&raw)
            && String::from_utf8_lossy(&reply.body).matches("\n\n").count() >= n
        {
            return reply;
        }
        let read = within("more frames", stream.read(&mut buffer))
            .await
            .expect("read");
        assert!(read > 0, "server closed before {n} frames: {raw:?}");
        raw.extend_from_slice(&buffer[..read]);
    }
}

/// Parses a (possibly partial) HTTP/1.1 response; `None` before the head is
/// complete.
pub fn parse(raw: &[u8]) -> Option<Reply> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).expect("UTF-8 head");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let mut reply = Reply {
        status,
        headers,
        body: Vec::new(),
        complete: false,
    };
    if reply.header("transfer-encoding") == Some("chunked") {
        let (body, complete) = dechunk(rest);
        reply.body = body;
        reply.complete = complete;
    } else {
        let length = reply
            .header("content-length")
            .and_then(|length| length.parse().ok())
            .unwrap_or(rest.len());
        reply.body = rest[..length.min(rest.len())].to_vec();
        reply.complete = rest.len() >= length;
    }
    Some(reply)
}

/// Decodes chunked transfer encoding; `true` when the last chunk was seen.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size = std::str::from_utf8(&rest[..line_end])
            .ok()
            .and_then(|size| usize::from_str_radix(size.trim(), 16).ok())
            .expect("chunk size");
        rest = &rest[line_end + 2..];
        if size == 0 {
            return (body, true);
        }
        if rest.len() < size + 2 {
            body.extend_from_slice(&rest[..size.min(rest.len())]);
            return (body, false);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}
