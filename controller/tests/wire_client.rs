//! The pipelined client and the peer manager against small servers on
//! 127.0.0.1: answers out of order, timeouts, reconnects and backoff.

mod wire_samples;
mod wire_server;

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use futures::{SinkExt, StreamExt, future::join_all};
use kafka_protocol::messages::{
    ApiKey, BrokerId, RequestKind, ResponseKind, VoteResponse, vote_response,
};
use kraft_controller::wire::{
    KafkaFrameCodec,
    client::{ClientConfig, ClientError, Connection, PeerManager, PeerResponse},
    decode_request, encode_response,
};
use tokio::{net::TcpListener, sync::mpsc, time::timeout};
use tokio_util::codec::Framed;
use wire_server::CannedServer;

/// A Vote request whose replica epoch is `epoch`; the servers below answer
/// with a leader epoch equal to it, so each answer names its request.
fn vote(epoch: i32) -> RequestKind {
    let RequestKind::Vote(mut r) = wire_samples::request(ApiKey::Vote, 2) else {
        unreachable!("sample is a Vote")
    };
    r.topics[0].partitions[0].replica_epoch = epoch;
    RequestKind::Vote(r)
}

fn vote_answer(request: &kraft_controller::wire::Request) -> ResponseKind {
    let kraft_controller::wire::Request::Kafka(RequestKind::Vote(r)) = request else {
        panic!("expected Vote, got {request:?}")
    };
    let epoch = r.topics[0].partitions[0].replica_epoch;
    ResponseKind::Vote(VoteResponse::default().with_topics(vec![
        vote_response::TopicData::default().with_partitions(vec![
            vote_response::PartitionData::default()
                .with_leader_id(BrokerId(-1))
                .with_leader_epoch(epoch),
        ]),
    ]))
}

fn answered_epoch(response: &ResponseKind) -> i32 {
    let ResponseKind::Vote(r) = response else {
        panic!("expected a Vote answer, got {response:?}")
    };
    r.topics[0].partitions[0].leader_epoch
}

fn fast_config() -> ClientConfig {
    ClientConfig {
        request_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(5),
        ..ClientConfig::default()
    }
}

#[tokio::test]
async fn many_requests_in_flight_on_one_connection_get_their_own_answers_out_of_order() {
    const N: usize = 16;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    // The server reads all N requests before answering any, then answers in
    // reverse order: only correlation ids can match them up.
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        let mut framed = Framed::new(stream, KafkaFrameCodec::default());
        let mut requests = Vec::new();
        while requests.len() < N {
            let frame = framed.next().await.expect("frame").expect("frame ok");
            requests.push(decode_request(frame.freeze()).expect("decodes"));
        }
        for r in requests.iter().rev() {
            let answer = encode_response(
                r.correlation_id(),
                r.api_key.kafka().expect("a kafka-protocol api"),
                r.api_version,
                &vote_answer(&r.body),
            )
            .expect("encodes");
            framed.send(answer).await.expect("send");
        }
    });
    let conn = Arc::new(
        Connection::connect(&addr, fast_config())
            .await
            .expect("connects"),
    );
    let calls = (0..N as i32).map(|i| {
        let conn = conn.clone();
        async move { (i, conn.call(2, vote(i)).await) }
    });
    for (i, result) in join_all(calls).await {
        let response = result.unwrap_or_else(|e| panic!("call {i} failed: {e}"));
        assert_eq!(answered_epoch(&response), i);
    }
    server.await.expect("server ran");
}

#[tokio::test]
async fn a_request_without_an_answer_times_out_and_closes_the_connection() {
    let server = CannedServer::start(Arc::new(|_| None)).await;
    let config = ClientConfig {
        request_timeout: Duration::from_millis(200),
        ..fast_config()
    };
    let conn = Arc::new(
        Connection::connect(&server.addr_string(), config)
            .await
            .expect("connects"),
    );
    let other = {
        let conn = conn.clone();
        tokio::spawn(async move {
            conn.call_with_timeout(2, vote(2), Duration::from_secs(30))
                .await
        })
    };
    let err = conn.call(2, vote(1)).await.expect_err("no answer comes");
    assert!(
        matches!(
            err,
            ClientError::Timeout {
                api_key: ApiKey::Vote,
                ..
            }
        ),
        "{err}"
    );
    assert!(conn.is_closed());
    // The other request in flight fails with the connection, long before its own 30 s.
    let other = timeout(Duration::from_secs(5), other)
        .await
        .expect("fails promptly")
        .expect("task ran");
    assert!(
        matches!(other, Err(ClientError::Disconnected { .. })),
        "{other:?}"
    );
    assert!(matches!(
        conn.call(2, vote(3)).await,
        Err(ClientError::Disconnected { .. })
    ));
}

#[tokio::test]
async fn connecting_to_a_closed_port_fails_with_the_address() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    drop(listener);
    let err = Connection::connect(&addr, fast_config())
        .await
        .expect_err("nothing listens");
    assert!(
        matches!(&err, ClientError::Connect { addr: a, .. } if *a == addr),
        "{err}"
    );
}

async fn next_response(rx: &mut mpsc::UnboundedReceiver<PeerResponse>) -> PeerResponse {
    timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a response within 10 s")
        .expect("channel open")
}

#[tokio::test]
async fn the_peer_manager_delivers_answers_with_their_tags_without_blocking_the_sender() {
    let server = CannedServer::start(Arc::new(|r| Some(vote_answer(&r.body.clone().into())))).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut peers = PeerManager::new(fast_config(), tx);
    peers.set_peer(2, &server.addr_string());
    for tag in 0..8u64 {
        peers
            .send(2, 2, vote(tag as i32 * 10), tag)
            .expect("queued");
    }
    let mut seen = Vec::new();
    for _ in 0..8 {
        let r = next_response(&mut rx).await;
        assert_eq!(r.node_id, 2);
        assert_eq!(r.api_key, ApiKey::Vote);
        let response = r.result.expect("answered");
        assert_eq!(answered_epoch(&response), r.tag as i32 * 10);
        seen.push(r.tag);
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..8).collect::<Vec<_>>());
    assert_eq!(
        server.connections.load(Ordering::SeqCst),
        1,
        "one pipelined connection"
    );
    assert!(matches!(
        peers.send(9, 2, vote(0), 0),
        Err(ClientError::UnknownNode(9))
    ));
}

#[tokio::test]
async fn a_failed_connect_starts_a_backoff_during_which_requests_fail_at_once() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    drop(listener);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let config = ClientConfig {
        retry_backoff: Duration::from_secs(60),
        ..fast_config()
    };
    let mut peers = PeerManager::new(config, tx);
    peers.set_peer(3, &addr);
    peers.send(3, 2, vote(1), 1).expect("queued");
    let first = next_response(&mut rx).await;
    assert!(
        matches!(first.result, Err(ClientError::Connect { .. })),
        "{:?}",
        first.result
    );
    peers.send(3, 2, vote(2), 2).expect("queued");
    let second = next_response(&mut rx).await;
    assert_eq!(second.tag, 2);
    assert!(
        matches!(second.result, Err(ClientError::Backoff { node_id: 3, .. })),
        "{:?}",
        second.result
    );
}

#[tokio::test]
async fn the_peer_manager_reconnects_after_the_peer_closes_the_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    // Each connection gets one answer, then the server hangs up.
    let server = tokio::spawn(async move {
        let mut accepted = 0;
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            accepted += 1;
            let mut framed = Framed::new(stream, KafkaFrameCodec::default());
            if let Some(Ok(frame)) = framed.next().await {
                let r = decode_request(frame.freeze()).expect("decodes");
                let answer = encode_response(
                    r.correlation_id(),
                    r.api_key.kafka().expect("a kafka-protocol api"),
                    r.api_version,
                    &vote_answer(&r.body),
                )
                .expect("encodes");
                let _ = framed.send(answer).await;
            }
            drop(framed);
            if accepted == 2 {
                return;
            }
        }
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let config = ClientConfig {
        retry_backoff: Duration::from_millis(5),
        ..fast_config()
    };
    let mut peers = PeerManager::new(config, tx);
    peers.set_peer(1, &addr);
    peers.send(1, 2, vote(7), 0).expect("queued");
    assert_eq!(
        answered_epoch(&next_response(&mut rx).await.result.expect("first answer")),
        7
    );
    // Poll: requests sent before the client saw the hang-up fail; a later one
    // goes over a new connection.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut tag = 1;
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no answer over a new connection"
        );
        peers.send(1, 2, vote(8), tag).expect("queued");
        let r = next_response(&mut rx).await;
        if let Ok(response) = r.result {
            assert_eq!(answered_epoch(&response), 8);
            break;
        }
        tag += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    timeout(Duration::from_secs(5), server)
        .await
        .expect("server saw its second connection")
        .expect("server ran");
}

/// `Connection::call_raw` (issue 22: UnregisterController, api 94, which
/// kafka-protocol lacks): the request goes out with a v2 header carrying the
/// raw api key, the answer's body comes back after its v1 header, and a
/// Vote pipelined behind it on the same connection still gets its own answer.
#[tokio::test]
async fn a_raw_call_carries_an_api_kafka_protocol_lacks_beside_a_decoded_one() {
    use bytes::{BufMut, BytesMut};
    use kafka_protocol::{
        messages::{RequestHeader, ResponseHeader},
        protocol::{Decodable, Encodable},
    };
    use kraft_controller::wire::own_messages::{
        UNREGISTER_CONTROLLER_API_KEY, UnregisterControllerRequest, UnregisterControllerResponse,
    };

    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        let mut framed = Framed::new(stream, KafkaFrameCodec::new(1 << 20));
        // The raw request first.
        let mut frame = framed
            .next()
            .await
            .expect("a frame")
            .expect("read")
            .freeze();
        let header = RequestHeader::decode(&mut frame, 2).expect("request header v2");
        assert_eq!(
            (header.request_api_key, header.request_api_version),
            (UNREGISTER_CONTROLLER_API_KEY, 0)
        );
        assert_eq!(
            UnregisterControllerRequest::decode(&frame, 0),
            Ok(UnregisterControllerRequest { controller_id: 3 })
        );
        // Then the Vote, answered first (out of order).
        let vote_frame = framed.next().await.expect("a frame").expect("read");
        let request = decode_request(vote_frame.freeze()).expect("a vote");
        let answer = encode_response(
            request.correlation_id(),
            request.api_key.kafka().expect("a kafka-protocol api"),
            request.api_version,
            &vote_answer(&request.body),
        )
        .expect("encode");
        framed.send(answer).await.expect("send vote answer");
        let mut out = BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(header.correlation_id)
            .encode(&mut out, 1)
            .expect("response header v1");
        let body = UnregisterControllerResponse {
            throttle_time_ms: 0,
            error_code: 136,
            error_message: Some("not registered".into()),
        }
        .encode(0)
        .expect("body");
        out.put_slice(&body);
        framed.send(out.freeze()).await.expect("send raw answer");
    });
    let conn = Connection::connect(&addr, fast_config())
        .await
        .expect("connect");
    let body = UnregisterControllerRequest { controller_id: 3 }
        .encode(0)
        .expect("body");
    let raw = conn.call_raw(
        UNREGISTER_CONTROLLER_API_KEY,
        0,
        &body,
        Duration::from_secs(5),
    );
    let decoded = conn.call(2, vote(42));
    let (raw, decoded) = tokio::join!(raw, decoded);
    assert_eq!(answered_epoch(&decoded.expect("vote answer")), 42);
    let answer = UnregisterControllerResponse::decode(&raw.expect("raw answer"), 0).expect("body");
    assert_eq!(answer.error_code, 136);
    assert_eq!(answer.error_message.as_deref(), Some("not registered"));
    server.await.expect("server");
}

/// A raw call nobody answers fails with `RawTimeout` naming its api key.
#[tokio::test]
async fn an_unanswered_raw_call_times_out_naming_its_api_key() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let _server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        let mut framed = Framed::new(stream, KafkaFrameCodec::new(1 << 20));
        while framed.next().await.is_some() {}
    });
    let conn = Connection::connect(&addr, fast_config())
        .await
        .expect("connect");
    let result = conn
        .call_raw(94, 0, &[0, 0, 0, 3, 0], Duration::from_millis(200))
        .await;
    assert!(
        matches!(result, Err(ClientError::RawTimeout { api_key: 94, .. })),
        "{result:?}"
    );
}
