//! Container probes: HTTP GET, TCP socket and exec, with Kubernetes' timing.
//!
//! A [`Prober`] holds one probe's schedule and counters: the first check after
//! `initialDelaySeconds`, then every `periodSeconds`; the result flips after
//! `successThreshold` successes or `failureThreshold` failures in a row. HTTP
//! and TCP checks connect from the host to the pod IP over the bridge; an HTTP
//! answer with a status in 200..400 is a success. Exec probes run the command
//! in the pod's network namespace. This module must not restart or kill
//! anything: the runtime acts on the results.

use std::time::Duration;

use k8s_openapi::{
    api::core::v1::{ContainerPort, Probe},
    apimachinery::pkg::util::intstr::IntOrString,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::{Instant, timeout},
};

/// One probe of one container run.
#[derive(Debug)]
pub struct Prober {
    probe: Probe,
    next_at: Instant,
    successes: i32,
    failures: i32,
    /// The current result; starts as `initial`.
    pub ok: bool,
}

impl Prober {
    /// A prober for a container that started at `started`; `initial` is the
    /// result before the first check (false for readiness and startup, true for liveness).
    pub fn new(probe: Probe, started: Instant, initial: bool) -> Self {
        let delay = secs(probe.initial_delay_seconds, 0);
        Self {
            probe,
            next_at: started + delay,
            successes: 0,
            failures: 0,
            ok: initial,
        }
    }

    /// Whether a check is due.
    pub fn due(&self, now: Instant) -> bool {
        now >= self.next_at
    }

    /// Whether the last `failureThreshold` checks all failed.
    pub fn failed(&self) -> bool {
        self.failures >= self.probe.failure_threshold.unwrap_or(3).max(1)
    }

    /// Runs one check against `ip` (HTTP, TCP) or in `netns` (exec) and updates
    /// the result; returns the result.
    pub async fn check(&mut self, ip: &str, netns: &str) -> bool {
        let limit = secs(self.probe.timeout_seconds, 1);
        let passed = timeout(limit, run_once(&self.probe, ip, netns))
            .await
            .unwrap_or(false);
        self.next_at = Instant::now() + secs(self.probe.period_seconds, 10);
        if passed {
            self.failures = 0;
            self.successes += 1;
            if self.successes >= self.probe.success_threshold.unwrap_or(1).max(1) {
                self.ok = true;
            }
        } else {
            self.successes = 0;
            self.failures += 1;
            if self.failures >= self.probe.failure_threshold.unwrap_or(3).max(1) {
                self.ok = false;
            }
        }
        self.ok
    }
}

fn secs(value: Option<i32>, default: i32) -> Duration {
    Duration::from_secs(u64::try_from(value.unwrap_or(default)).unwrap_or(0))
}

/// `probe` with a named port (`port: http`) of its HTTP GET or TCP socket
/// check replaced by the number of the container port of that name, as the
/// kubelet resolves it. A name no container port has stays as it is (and the
/// check fails).
pub fn resolve_named_ports(mut probe: Probe, ports: &[ContainerPort]) -> Probe {
    let resolve = |port: &mut IntOrString| {
        if let IntOrString::String(name) = port
            && let Some(p) = ports
                .iter()
                .find(|p| p.name.as_deref() == Some(name.as_str()))
        {
            *port = IntOrString::Int(p.container_port);
        }
    };
    if let Some(http) = probe.http_get.as_mut() {
        resolve(&mut http.port);
    }
    if let Some(tcp) = probe.tcp_socket.as_mut() {
        resolve(&mut tcp.port);
    }
    probe
}

fn port_of(port: &IntOrString) -> Option<u16> {
    match port {
        IntOrString::Int(p) => u16::try_from(*p).ok(),
        // Names are resolved by `resolve_named_ports`; digits are accepted.
        IntOrString::String(s) => s.parse().ok(),
    }
}

async fn run_once(probe: &Probe, ip: &str, netns: &str) -> bool {
    if let Some(http) = &probe.http_get {
        let Some(port) = port_of(&http.port) else {
            return false;
        };
        let path = http.path.clone().unwrap_or_else(|| "/".into());
        return http_get(ip, port, &path).await;
    }
    if let Some(tcp) = &probe.tcp_socket {
        let Some(port) = port_of(&tcp.port) else {
            return false;
        };
        return TcpStream::connect((ip, port)).await.is_ok();
    }
    if let Some(exec) = &probe.exec {
        let command = exec.command.clone().unwrap_or_default();
        if command.is_empty() {
            return false;
        }
        return tokio::process::Command::new("ip")
            .args(["netns", "exec", netns])
            .args(&command)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .status()
            .await
            .map(|s| s.success())
            .unwrap_or(false);
    }
    false
}

/// HTTP/1.0 GET; success when the status code is in 200..400.
pub async fn http_get(ip: &str, port: u16, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect((ip, port)).await else {
        return false;
    };
    let request =
        format!("GET {path} HTTP/1.0\r\nHost: {ip}:{port}\r\nUser-Agent: kube-probe/1.33\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut head = [0u8; 32];
    let mut read = 0;
    while read < 12 {
        match stream.read(&mut head[read..]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    parse_status(&head[..read]).is_some_and(|code| (200..400).contains(&code))
}

/// The status code of an HTTP status line (`HTTP/1.1 200 OK`).
fn parse_status(head: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(head).ok()?;
    let mut parts = text.split_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/"))?;
    parts.next()?.get(..3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::HTTPGetAction;
    use tokio::net::TcpListener;

    use super::*;

    #[test]
    fn status_lines_are_parsed() {
        assert_eq!(parse_status(b"HTTP/1.1 200 OK\r\n"), Some(200));
        assert_eq!(parse_status(b"HTTP/1.0 503 Service"), Some(503));
        assert_eq!(parse_status(b"garbage"), None);
    }

    async fn serve_once(status: &'static str) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 512];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").as_bytes())
                    .await;
            }
        });
        port
    }

    fn http_probe(port: u16, failure_threshold: i32) -> Probe {
        Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/readyz".into()),
                port: IntOrString::Int(port.into()),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(1),
            failure_threshold: Some(failure_threshold),
            ..Probe::default()
        }
    }

    #[tokio::test]
    async fn a_200_answer_makes_the_probe_pass() {
        let port = serve_once("200 OK").await;
        let mut p = Prober::new(http_probe(port, 1), Instant::now(), false);
        assert!(p.check("127.0.0.1", "").await);
    }

    #[tokio::test]
    async fn a_503_answer_fails_only_after_the_failure_threshold() {
        let port = serve_once("503 Service Unavailable").await;
        let mut p = Prober::new(http_probe(port, 2), Instant::now(), true);
        assert!(
            p.check("127.0.0.1", "").await,
            "one failure is below the threshold"
        );
        assert!(!p.check("127.0.0.1", "").await);
    }

    #[tokio::test]
    async fn a_closed_port_fails() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        assert!(!http_get("127.0.0.1", port, "/").await);
    }

    #[test]
    fn a_named_probe_port_is_resolved_to_the_container_port_of_that_name() {
        let mut probe = http_probe(1, 1);
        if let Some(http) = probe.http_get.as_mut() {
            http.port = IntOrString::String("http".into());
        }
        let ports = [ContainerPort {
            name: Some("http".into()),
            container_port: 8080,
            ..ContainerPort::default()
        }];
        let resolved = resolve_named_ports(probe, &ports);
        let port = resolved.http_get.map(|h| h.port);
        assert_eq!(port, Some(IntOrString::Int(8080)));
    }
}
