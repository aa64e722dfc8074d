//! The head of one HTTP/1.x request, read for kwire's small endpoints (`kwire exporter`'s
//! `/metrics`, `kwire proxy --control`): at most 16 KiB, within 5 s.

use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::net::TcpStream;

/// The request line's method and path (without its query), or `None` when the head did not
/// come within 5 s.
pub async fn read_request_line(stream: &mut TcpStream) -> Option<(String, String)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    tokio::time::timeout(Duration::from_secs(5), async {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
    .ok()?;
    let request = String::from_utf8_lossy(&buf);
    let mut first = request.lines().next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let path = first.next().unwrap_or("").split('?').next().unwrap_or("").to_owned();
    Some((method, path))
}
