//! Serving a router on a listener the caller bound, provider-neutral:
//!
//! - [`serve`] spawns the server and returns a [`ServerHandle`] with the bound address
//!   and a graceful [`ServerHandle::stop`];
//! - every connection carries a [`ConnKill`] (a handler reads it with
//!   `ConnectInfo<ConnKill>`): [`ConnKill::kill`] makes the connection fail every read
//!   and write, so the handler's answer is never sent and the client sees the
//!   connection drop — how the `timeout` fault answers "nothing";
//! - [`Stopping`] lets handlers that hold a request (latency, timeout) end early when
//!   the server stops.
use axum::Router;
use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Debug, Default)]
struct KillState {
    killed: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

/// The kill switch of one connection.
#[derive(Clone, Debug, Default)]
pub struct ConnKill(Arc<KillState>);

impl ConnKill {
    /// Drops the connection: every later read or write fails, nothing more is sent.
    pub fn kill(&self) {
        self.0.killed.store(true, Ordering::SeqCst);
        let wakers = std::mem::take(&mut *self.0.wakers.lock().unwrap_or_else(|e| e.into_inner()));
        for w in wakers {
            w.wake();
        }
    }

    pub fn is_killed(&self) -> bool {
        self.0.killed.load(Ordering::SeqCst)
    }

    fn check(&self, cx: &Context<'_>) -> Option<io::Error> {
        if self.is_killed() {
            return Some(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "connection dropped by an emulator fault",
            ));
        }
        let mut wakers = self.0.wakers.lock().unwrap_or_else(|e| e.into_inner());
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        None
    }
}

/// A TCP stream that a [`ConnKill`] can break.
#[derive(Debug)]
pub struct KillableStream {
    inner: TcpStream,
    kill: ConnKill,
}

impl AsyncRead for KillableStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(e) = self.kill.check(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.kill.check(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(e) = self.kill.check(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A listener whose connections can be killed; it keeps weak references to them so
/// that a stop can break the ones still open.
#[derive(Debug)]
pub struct KillableListener {
    inner: TcpListener,
    open: Arc<Mutex<Vec<Weak<KillState>>>>,
}

impl Listener for KillableListener {
    type Io = KillableStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    let kill = ConnKill::default();
                    let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
                    open.retain(|w| w.strong_count() > 0);
                    open.push(Arc::downgrade(&kill.0));
                    return (
                        KillableStream {
                            inner: stream,
                            kill,
                        },
                        addr,
                    );
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait a little, as axum does.
                    tracing::debug!(error = %e, "Accept failed.");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl Connected<IncomingStream<'_, KillableListener>> for ConnKill {
    fn connect_info(stream: IncomingStream<'_, KillableListener>) -> Self {
        stream.io().kill.clone()
    }
}

/// Tells handlers that hold a request that the server is stopping.
#[derive(Clone, Debug)]
pub struct Stopping(watch::Receiver<bool>);

impl Stopping {
    /// Sleeps `d`, or less if the server stops meanwhile. Returns false if it stopped.
    pub async fn sleep(&self, d: Duration) -> bool {
        if d.is_zero() {
            return !*self.0.borrow();
        }
        let mut rx = self.0.clone();
        tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = rx.wait_for(|s| *s) => false,
        }
    }

    pub fn is_stopping(&self) -> bool {
        *self.0.borrow()
    }
}

/// A running server.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<io::Result<()>>,
    open: Arc<Mutex<Vec<Weak<KillState>>>>,
}

/// A stop signal for handlers, made before the router that captures it.
pub fn stopping() -> (watch::Sender<bool>, Stopping) {
    let (tx, rx) = watch::channel(false);
    (tx, Stopping(rx))
}

/// Serves `router` on `listener` until [`ServerHandle::stop`]. `stop_tx` is the sender
/// of the [`Stopping`] the router's handlers hold (see [`stopping`]).
pub fn serve(
    listener: TcpListener,
    router: Router,
    stop_tx: watch::Sender<bool>,
) -> io::Result<ServerHandle> {
    let addr = listener.local_addr()?;
    let open = Arc::new(Mutex::new(Vec::new()));
    let listener = KillableListener {
        inner: listener,
        open: open.clone(),
    };
    let mut stop_rx = stop_tx.subscribe();
    let task = tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<ConnKill>(),
        )
        .with_graceful_shutdown(async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        })
        .await
    });
    Ok(ServerHandle {
        addr,
        stop: stop_tx,
        task,
        open,
    })
}

impl ServerHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, ends held requests, lets answers in flight finish (up to 2s),
    /// then breaks the connections still open.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let mut task = self.task;
        if tokio::time::timeout(Duration::from_secs(2), &mut task)
            .await
            .is_err()
        {
            for w in self
                .open
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .filter_map(Weak::upgrade)
            {
                ConnKill(w).kill();
            }
            if tokio::time::timeout(Duration::from_secs(1), &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

/// The first half of `dnsplane emulate …` for any emulator: reads the options from
/// `config` (`load`; the defaults without one), binds `listen`, and starts the
/// emulator with `start`. A start refused as `InvalidInput` (a seed or option the
/// emulator cannot take) is the config file's error, naming it.
pub async fn launch<O, E, Fut>(
    listen: SocketAddr,
    config: Option<&std::path::Path>,
    load: impl FnOnce(&std::path::Path) -> Result<O, crate::EmulateError>,
    start: impl FnOnce(TcpListener, O) -> Fut,
) -> Result<(E, O), crate::EmulateError>
where
    O: Default + Clone,
    Fut: std::future::Future<Output = io::Result<E>>,
{
    use crate::EmulateError;
    let opts = match config {
        Some(path) => load(path)?,
        None => O::default(),
    };
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|source| EmulateError::Bind {
            addr: listen,
            source,
        })?;
    let emu = start(listener, opts.clone())
        .await
        .map_err(|e| match config {
            Some(path) if e.kind() == io::ErrorKind::InvalidInput => EmulateError::Config {
                path: path.to_path_buf(),
                message: e.to_string(),
            },
            _ => EmulateError::Io(e),
        })?;
    Ok((emu, opts))
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM: when `dnsplane emulate …` stops.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
