//! A do-nothing HTTP proxy: the floor of any process in the middle that reads HTTP.
//!
//! `mcpr-bench --http-relay-target HOST:PORT` serves HTTP/1.1 on a loopback port and sends each
//! request, headers and body as they are, to `HOST:PORT` over a connection of its own per front
//! connection (hyper's client and server, one thread), and the answer back as it comes. It reads
//! no JSON and decides nothing, so what it adds is what reading and writing HTTP twice costs: a
//! fairer floor for an HTTP gateway than the byte relay, which never parses a request.

use std::process::ExitCode;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

pub(crate) fn http_relay_target(args: &[String]) -> ExitCode {
    let [target] = args else {
        eprintln!("usage: mcpr-bench --http-relay-target HOST:PORT");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("http relay: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(target.clone()))
}

async fn serve(target: String) -> ExitCode {
    let listener = match TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("http relay: cannot listen: {e}");
            return ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(address) => eprintln!("listening on http://{address}"),
        Err(e) => {
            eprintln!("http relay: {e}");
            return ExitCode::FAILURE;
        }
    }
    while let Ok((front, _)) = listener.accept().await {
        let target = target.clone();
        tokio::spawn(async move {
            if let Err(e) = relay(front, &target).await {
                eprintln!("http relay: {e}");
            }
        });
    }
    ExitCode::SUCCESS
}

/// Serve one front connection, over one connection to `target`.
async fn relay(front: TcpStream, target: &str) -> Result<(), Box<dyn std::error::Error>> {
    let back = TcpStream::connect(target).await?;
    front.set_nodelay(true)?;
    back.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(back)).await?;
    tokio::spawn(connection);
    let sender = Arc::new(Mutex::new(sender));
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let sender = sender.clone();
        async move { forward(&sender, request).await }
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(front), service)
        .await?;
    Ok(())
}

async fn forward(
    sender: &Mutex<SendRequest<Incoming>>,
    request: Request<Incoming>,
) -> Result<Response<Incoming>, hyper::Error> {
    let mut sender = sender.lock().await;
    sender.ready().await?;
    sender.send_request(request).await
}
