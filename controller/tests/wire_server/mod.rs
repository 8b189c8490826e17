//! A tiny Kafka server for tests on 127.0.0.1, built on the wire layer: it
//! decodes each request and answers with whatever the test's handler returns
//! (nothing when the handler returns `None`).

#![allow(dead_code)]

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use kraft_controller::wire::{
    Api, KafkaFrameCodec, Request, WireError, decode_request, encode_response,
};
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::codec::Framed;

/// A request as the canned server's handler sees it: a `kafka-protocol`
/// api and body (an AddRaftVoter as its v0 fields; UnregisterController
/// never reaches a handler and is not answered).
#[derive(Debug)]
pub struct CannedRequest {
    pub api_key: ApiKey,
    pub api_version: i16,
    pub correlation_id: i32,
    pub body: RequestKind,
}

impl CannedRequest {
    fn of(request: kraft_controller::wire::DecodedRequest) -> Option<Self> {
        let Api::Kafka(api_key) = request.api_key else {
            return None;
        };
        let body = match request.body {
            Request::Kafka(body) => body,
            Request::AddRaftVoter(v1) => RequestKind::AddRaftVoter(v1.request),
            Request::UnregisterController(_) => return None,
        };
        Some(Self {
            api_key,
            api_version: request.api_version,
            correlation_id: request.header.correlation_id,
            body,
        })
    }
}

pub type Handler = Arc<dyn Fn(&CannedRequest) -> Option<ResponseKind> + Send + Sync>;

pub struct CannedServer {
    pub addr: SocketAddr,
    pub connections: Arc<AtomicUsize>,
    pub requests: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl CannedServer {
    pub async fn start(handler: Handler) -> CannedServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let (c, r) = (connections.clone(), requests.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                c.fetch_add(1, Ordering::SeqCst);
                let handler = handler.clone();
                let r = r.clone();
                tokio::spawn(async move {
                    let mut framed = Framed::new(stream, KafkaFrameCodec::default());
                    while let Some(Ok(frame)) = framed.next().await {
                        r.fetch_add(1, Ordering::SeqCst);
                        let reply = match decode_request(frame.freeze()) {
                            Ok(request) => CannedRequest::of(request).and_then(|request| {
                                handler(&request).map(|body| {
                                    encode_response(
                                        request.correlation_id,
                                        request.api_key,
                                        request.api_version,
                                        &body,
                                    )
                                    .expect("canned response encodes")
                                })
                            }),
                            Err(WireError::Unsupported(u)) => u.response(),
                            Err(_) => return,
                        };
                        if let Some(bytes) = reply
                            && framed.send(bytes).await.is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        CannedServer {
            addr,
            connections,
            requests,
            task,
        }
    }

    pub fn addr_string(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for CannedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
