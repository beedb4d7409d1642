//! A build without the `otlp` feature: whether export was asked for, to say it is not done.

/// An OTLP endpoint variable is set (to anything but empty).
pub fn asked() -> bool {
    ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()))
}
