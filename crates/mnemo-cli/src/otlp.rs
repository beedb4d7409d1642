//! Traces out over OTLP (cargo feature `otlp`): when `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, every `tracing` span at `info` and above (remember,
//! recall, the model calls, the index's work; docs/observability.md) is exported over OTLP
//! HTTP/protobuf in batches, on the SDK's own thread; the batch left at exit is flushed when the
//! returned [`Exporter`] drops. The standard OpenTelemetry variables configure it
//! (`OTEL_SERVICE_NAME`, default `mnemo`; `OTEL_RESOURCE_ATTRIBUTES`; headers and timeouts).
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::trace::SdkTracerProvider;

/// The variables that ask for export (either one).
pub const ENDPOINT_VARS: [&str; 2] = ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"];

/// Why traces cannot be exported as asked.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// A transport this build does not have.
    #[error(
        "{var}={value:?}: this build exports OTLP over HTTP/protobuf only; set it to http/protobuf (or unset it) and point the endpoint at the collector's HTTP port (4318)"
    )]
    Protocol { var: &'static str, value: String },
    /// The exporter could not be built (a malformed endpoint, headers or timeout).
    #[error("cannot export traces over OTLP: {0}")]
    Build(#[source] opentelemetry_otlp::ExporterBuildError),
}

/// The running export: flushes and stops when dropped.
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        // The last batch goes out before the process ends (bounded by the SDK's export timeout).
        if let Err(e) = self.provider.shutdown() {
            eprintln!("mnemo: the last traces were not exported over OTLP: {e}");
        }
    }
}

/// Whether export is asked for: an endpoint variable set (to anything but empty), and the SDK
/// not disabled (`OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`).
pub fn asked() -> bool {
    let set = |v: &str| std::env::var(v).is_ok_and(|s| !s.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|s| s.trim().eq_ignore_ascii_case("true"))
        || std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|s| s.trim().eq_ignore_ascii_case("none"));
    ENDPOINT_VARS.iter().any(|v| set(v)) && !disabled
}

/// The `tracing` layer that feeds the export.
pub type SpanLayer<S> = tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>;

/// The exporter and the `tracing` layer that feeds it (None: export not asked for).
pub fn start<S>() -> Result<Option<(Exporter, SpanLayer<S>)>, OtlpError>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    if !asked() {
        return Ok(None);
    }
    for var in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
        if let Ok(value) = std::env::var(var) {
            if !value.trim().is_empty() && value.trim() != "http/protobuf" {
                return Err(OtlpError::Protocol { var, value });
            }
        }
    }
    // reqwest is built with rustls and no provider of its own: the workspace's (ring), as the
    // live model client installs it; installing it twice is harmless (the first one stays).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()
        .map_err(OtlpError::Build)?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name("mnemo");
    }
    let resource =
        resource.with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))).build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let tracer = provider.tracer("mnemo");
    Ok(Some((Exporter { provider }, tracing_opentelemetry::layer().with_tracer(tracer))))
}
