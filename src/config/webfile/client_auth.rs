//! `client_auth_type`: Go's five client-certificate policies on rustls.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};

use super::{Invalid, invalid};

const KEY: &str = "tls_server_config.client_auth_type";

/// The verifier for `policy`; `client_ca` is the PEM and the key it came from.
pub(super) fn verifier(
    policy: &str,
    client_ca: Option<(Vec<u8>, String)>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, Invalid> {
    let verified = |optional: bool| -> Result<Arc<dyn ClientCertVerifier>, Invalid> {
        let Some((pem, key)) = &client_ca else {
            return Err(invalid(
                "tls_server_config.client_ca_file",
                format!("is required with client_auth_type {policy}"),
            ));
        };
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| invalid(key, format!("is not a PEM certificate: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| invalid(key, format!("holds an unusable CA certificate: {e}")))?;
        }
        if roots.is_empty() {
            return Err(invalid(key, "holds no PEM certificate"));
        }
        let builder =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
        let builder = if optional {
            builder.allow_unauthenticated()
        } else {
            builder
        };
        builder
            .build()
            .map_err(|e| invalid(key, e.to_string()))
            .map(|v| v as Arc<dyn ClientCertVerifier>)
    };
    let unverified = |mandatory: bool| -> Arc<dyn ClientCertVerifier> {
        Arc::new(AnyCertificate {
            mandatory,
            algorithms: provider.signature_verification_algorithms,
        })
    };
    let verifier = match policy {
        "" | "NoClientCert" => {
            if client_ca.is_some() {
                return Err(invalid(
                    KEY,
                    "client CAs are configured without a client auth policy; set RequireAndVerifyClientCert (or VerifyClientCertIfGiven)",
                ));
            }
            WebPkiClientVerifier::no_client_auth()
        }
        "RequestClientCert" => unverified(false),
        "RequireAnyClientCert" | "RequireClientCert" => unverified(true),
        "VerifyClientCertIfGiven" => verified(true)?,
        "RequireAndVerifyClientCert" => verified(false)?,
        other => {
            return Err(invalid(
                KEY,
                format!(
                    "`{other}` is not a policy; one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert"
                ),
            ));
        }
    };
    Ok(verifier)
}

/// Go's `RequestClientCert` / `RequireAnyClientCert`: a certificate is
/// asked for (and required when `mandatory`) but not checked against any
/// CA; only the handshake signature proves the client holds its key.
#[derive(Debug)]
struct AnyCertificate {
    mandatory: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyCertificate {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
