//! Accepted connections, TLS or not, for tonic (`serve_with_incoming*`, as a `Stream`)
//! and axum (`axum::serve`, as a `Listener`). Handshakes run each in a task of its own
//! (a slow client holds up no one) with a deadline; a client that speaks plaintext to a
//! TLS port gets an answer saying so (HTTP/1.1: a 400; HTTP/2: a GOAWAY whose debug
//! data says it) rather than a silently closed socket.
use super::server::PortTls;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a plaintext client is told.
const PLAINTEXT_REFUSAL: &str = "this port speaks TLS: use https://";

/// The client of a TLS connection that presented a certificate the server verified.
#[derive(Debug, Clone)]
pub struct ClientIdentity {
    /// The certificate's subjectAltName DNS names (lowercase).
    pub dns_names: Vec<String>,
    /// The leaf certificate (DER), for whatever else a service wants to read from it.
    pub certificate: rustls_pki_types::CertificateDer<'static>,
}

/// Who is on the other end; in every gRPC request's extensions
/// (`request.extensions().get::<ConnInfo>()`, or [`super::client_identity`]).
#[derive(Debug, Clone)]
pub struct ConnInfo {
    pub remote_addr: SocketAddr,
    /// The connection is TLS.
    pub tls: bool,
    /// The verified client certificate, if one was presented.
    pub client: Option<Arc<ClientIdentity>>,
}

/// One accepted connection.
#[derive(Debug)]
pub enum Conn {
    Plain(TcpStream, ConnInfo),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>, ConnInfo),
}

impl Conn {
    pub fn info(&self) -> &ConnInfo {
        match self {
            Conn::Plain(_, i) | Conn::Tls(_, i) => i,
        }
    }
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = ConnInfo;
    fn connect_info(&self) -> ConnInfo {
        self.info().clone()
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s, _) => s.is_write_vectored(),
            Conn::Tls(s, _) => s.is_write_vectored(),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A listener's connections, handshaken when `tls` is set. Dropping it stops
/// accepting.
#[derive(Debug)]
pub struct Incoming {
    rx: mpsc::Receiver<Conn>,
    local: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Incoming {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Incoming {
    /// Starts accepting on `listener` (inside a Tokio runtime). `what` names the port
    /// in logs (`planner gRPC`, `applier admin`).
    pub fn new(
        listener: TcpListener,
        tls: Option<Arc<PortTls>>,
        what: &'static str,
    ) -> io::Result<Incoming> {
        let local = listener.local_addr()?;
        let (tx, rx) = mpsc::channel(64);
        let task = tokio::spawn(accept_loop(listener, tls, what, tx));
        Ok(Incoming { rx, local, task })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<Arc<PortTls>>,
    what: &'static str,
    tx: mpsc::Sender<Conn>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors and the like: wait, as axum and tonic do.
                tracing::warn!(port = what, error = %e, "Accept failed.");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // No Nagle: a batch result held back for a delayed ACK costs ~40 ms.
        let _ = stream.set_nodelay(true);
        let info = ConnInfo {
            remote_addr: peer,
            tls: tls.is_some(),
            client: None,
        };
        match &tls {
            None => {
                if tx.send(Conn::Plain(stream, info)).await.is_err() {
                    return;
                }
            }
            Some(tls) => {
                let (tls, tx) = (tls.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(
                        HANDSHAKE_TIMEOUT,
                        handshake(&tls, stream, info, what),
                    )
                    .await
                    {
                        Ok(Some(conn)) => {
                            let _ = tx.send(conn).await;
                        }
                        Ok(None) => {}
                        Err(_) => {
                            tracing::warn!(port = what, client = %peer, "TLS handshake timed out.")
                        }
                    }
                });
            }
        }
    }
}

async fn handshake(
    tls: &PortTls,
    stream: TcpStream,
    mut info: ConnInfo,
    what: &'static str,
) -> Option<Conn> {
    let peer = info.remote_addr;
    let mut first = [0u8; 1];
    match stream.peek(&mut first).await {
        Ok(1) => {}
        _ => return None,
    }
    // Every TLS connection opens with a handshake record (content type 22).
    if first[0] != 0x16 {
        refuse_plaintext(stream, peer, what).await;
        return None;
    }
    let config = match tls.config() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(port = what, error = %e, "No TLS config.");
            return None;
        }
    };
    match tokio_rustls::TlsAcceptor::from(config).accept(stream).await {
        Ok(s) => {
            info.client = s
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|leaf| {
                    Arc::new(ClientIdentity {
                        dns_names: super::san::dns_names(leaf),
                        certificate: leaf.clone().into_owned(),
                    })
                });
            Some(Conn::Tls(Box::new(s), info))
        }
        Err(e) => {
            tracing::warn!(port = what, client = %peer, error = %e, "TLS handshake failed; connection refused.");
            None
        }
    }
}

/// Answers a plaintext client in its own protocol, then closes.
async fn refuse_plaintext(mut stream: TcpStream, peer: SocketAddr, what: &'static str) {
    tracing::warn!(port = what, client = %peer, "Plaintext client on a TLS port; told to use TLS.");
    let mut head = [0u8; 4];
    let got = tokio::time::timeout(Duration::from_secs(2), stream.read_exact(&mut head)).await;
    if !matches!(got, Ok(Ok(_))) {
        return;
    }
    let reply = if &head == b"PRI " {
        refuse_h2(&mut stream).await
    } else {
        let body = format!("{PLAINTEXT_REFUSAL}\n");
        format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    let _ = stream.write_all(&reply).await;
    let _ = stream.shutdown().await;
    // Read what the client still sends until it hangs up (bounded): closing with
    // unread data would send a reset that can overtake the reply.
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// HTTP/2 in plaintext: an empty SETTINGS (the server preface), then, once the
/// client's first request is open (so that the request, not only the connection,
/// fails with it), a GOAWAY(PROTOCOL_ERROR) whose debug data says why.
async fn refuse_h2(stream: &mut TcpStream) -> Vec<u8> {
    let _ = stream.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        // The rest of the client preface, then frames until a HEADERS (type 1).
        let mut rest = [0u8; 20];
        stream.read_exact(&mut rest).await?;
        let mut skipped = 0usize;
        loop {
            let mut header = [0u8; 9];
            stream.read_exact(&mut header).await?;
            if header[3] == 1 || skipped > 1 << 16 {
                return Ok::<_, io::Error>(());
            }
            let len =
                usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
            let mut payload = vec![0u8; len];
            stream.read_exact(&mut payload).await?;
            skipped += 9 + len;
        }
    })
    .await;
    let debug = PLAINTEXT_REFUSAL.as_bytes();
    let len = u32::try_from(8 + debug.len()).unwrap_or(8).to_be_bytes();
    let mut frame = len[1..].to_vec();
    frame.extend_from_slice(&[7, 0, 0, 0, 0, 0]);
    frame.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1]);
    frame.extend_from_slice(debug);
    frame
}

impl tokio_stream::Stream for Incoming {
    type Item = io::Result<Conn>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx).map(|c| c.map(Ok))
    }
}

impl axum::serve::Listener for Incoming {
    type Io = Conn;
    type Addr = SocketAddr;
    async fn accept(&mut self) -> (Conn, SocketAddr) {
        match self.rx.recv().await {
            Some(c) => {
                let addr = c.info().remote_addr;
                (c, addr)
            }
            // The accept loop is gone (it only ends when this is dropped).
            None => std::future::pending().await,
        }
    }
    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}
