//! A throwaway PKI for TLS tests: a CA and the certificates it issues,
//! written as PEM files. Shared by the unit tests of the web config (by
//! path) and the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// A certificate authority and where its certificate is.
pub struct Ca {
    params: CertificateParams,
    key: KeyPair,
    pub cert_file: PathBuf,
}

/// A leaf certificate's PEM files.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// Key then certificate in one file (ZooKeeper's PEM key store).
    pub bundle_file: PathBuf,
}

impl Ca {
    /// A new CA `name`, its certificate written to `dir/<name>-ca.pem`.
    pub fn new(dir: &Path, name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} test CA"));
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let cert_file = dir.join(format!("{name}-ca.pem"));
        std::fs::write(&cert_file, cert.pem()).unwrap();
        Self {
            params,
            key,
            cert_file,
        }
    }

    /// Issues a certificate for `names` (DNS names or IP addresses),
    /// written to `dir/<file>.pem` and `dir/<file>-key.pem`.
    pub fn issue(&self, dir: &Path, file: &str, names: &[&str]) -> Leaf {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, file);
        let key = KeyPair::generate().unwrap();
        let issuer = Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).unwrap();
        let leaf = Leaf {
            cert_file: dir.join(format!("{file}.pem")),
            key_file: dir.join(format!("{file}-key.pem")),
            bundle_file: dir.join(format!("{file}-bundle.pem")),
        };
        std::fs::write(&leaf.cert_file, cert.pem()).unwrap();
        std::fs::write(&leaf.key_file, key.serialize_pem()).unwrap();
        std::fs::write(
            &leaf.bundle_file,
            format!("{}{}", key.serialize_pem(), cert.pem()),
        )
        .unwrap();
        leaf
    }
}
