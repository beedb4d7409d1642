//! The HTTP agent of `fetch`: TLS roots from the platform first, Mozilla's bundled roots second.
//!
//! Why the platform first: behind a corporate TLS-intercepting proxy, the proxy's CA is in the
//! system store and nowhere else, so a client that trusts only a bundled root list cannot
//! download anything. Why the bundled roots second: a minimal container may have no system
//! store at all. Either way the wheel's sha256 is checked against the pin afterwards, so the
//! roots decide only whether the download can happen, not what gets installed.
use ureq::tls::{RootCerts, TlsConfig};
use ureq::Agent;

/// Which root certificates an agent trusts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Roots {
    /// The operating system's trust store (rustls-platform-verifier).
    Platform,
    /// Mozilla's roots compiled into the binary (webpki-roots).
    Bundled,
}

impl Roots {
    /// In the order they are tried.
    pub(crate) const ORDER: [Roots; 2] = [Roots::Platform, Roots::Bundled];

    /// For error messages.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Roots::Platform => "the system's root certificates",
            Roots::Bundled => "the bundled Mozilla root certificates",
        }
    }
}

/// An agent trusting `roots`.
pub(crate) fn agent(roots: Roots) -> Agent {
    let root_certs = match roots {
        Roots::Platform => RootCerts::PlatformVerifier,
        Roots::Bundled => RootCerts::WebPki,
    };
    Agent::config_builder().tls_config(TlsConfig::builder().root_certs(root_certs).build()).build().into()
}

/// Whether a failed request is worth retrying with other roots: a connection-level failure
/// (TLS handshake, certificate, I/O) may be; an HTTP status answer from the server is not.
pub(crate) fn retry_with_other_roots(e: &ureq::Error) -> bool {
    !matches!(e, ureq::Error::StatusCode(_))
}
