//! Traces out over OTLP: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, a command's spans reach the
//! collector at that address (here a loopback HTTP receiver the test starts), named as
//! OpenTelemetry's GenAI conventions name a model call; a transport this build lacks is refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod cli_run;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use cli_run::{ok, text};

/// What the receiver got: (path, body) per request.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP receiver on loopback that answers every request 200 with an empty body.
fn receiver() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    let got: Received = Arc::default();
    let keep = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                // Requests on one connection, one after another (keep-alive).
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mut length = 0usize;
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                length = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    keep.lock().unwrap().push((path, body));
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if writer.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, got)
}

fn mnemo_exporting(dir: &std::path::Path, endpoint: &str, args: &[&str]) -> std::process::Output {
    cli_run::command(dir)
        .args(args)
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        .env_remove("OTEL_SERVICE_NAME")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .output()
        .unwrap()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn a_commands_spans_reach_the_collector_it_names() {
    let d = tempfile::tempdir().unwrap();
    let (endpoint, got) = receiver();
    ok(&mnemo_exporting(d.path(), &endpoint, &["remember", "[SEM] Northwind Labs | owner | Ben"]));
    ok(&mnemo_exporting(d.path(), &endpoint, &["recall", "who owns Northwind Labs"]));
    let got = got.lock().unwrap();
    assert!(!got.is_empty(), "nothing reached the receiver");
    assert!(got.iter().all(|(path, _)| path == "/v1/traces"), "{:?}", got.iter().map(|g| &g.0).collect::<Vec<_>>());
    let all: Vec<u8> = got.iter().flat_map(|(_, b)| b.clone()).collect();
    // The service, the engine's spans, and the model call as the GenAI conventions name it.
    // (The fake client is asked for the configured model and echoes its own, `fake-qwen`.)
    for needle in
        ["mnemo", "recall", "turn", "chat qwen-flash", "gen_ai.operation.name", "gen_ai.response.model", "fake-qwen"]
    {
        assert!(contains(&all, needle), "no {needle:?} in the exported spans");
    }
}

#[test]
fn a_transport_this_build_lacks_is_refused_naming_the_variable() {
    let d = tempfile::tempdir().unwrap();
    let o = cli_run::command(d.path())
        .args(["recall", "anything"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && err.contains("http/protobuf"), "{err}");
}
