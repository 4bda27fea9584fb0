//! A CA and a server certificate signed by it, made with rcgen.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SignatureAlgorithm,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The server key's algorithm.
#[derive(Clone, Copy, Debug)]
pub enum KeyKind {
    /// ECDSA P-256 (rcgen's default): a signature's length depends on its
    /// random nonce.
    EcdsaP256,
    /// Ed25519: deterministic signatures of one length.
    Ed25519,
}

impl KeyKind {
    fn alg(self) -> &'static SignatureAlgorithm {
        match self {
            KeyKind::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
            KeyKind::Ed25519 => &rcgen::PKCS_ED25519,
        }
    }
}

/// A CA, and a certificate it signed for some DNS names.
#[derive(Clone, Debug)]
pub struct Pki {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub ca_der: CertificateDer<'static>,
    pub cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl Pki {
    /// A new CA and a certificate for `names`, both with `kind` keys.
    pub fn issue(names: &[&str], kind: KeyKind) -> Pki {
        let ca_key = KeyPair::generate_for(kind.alg()).expect("rcgen makes a CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("no names to check");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "sim test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).expect("rcgen signs the CA");
        let issuer = Issuer::new(ca, ca_key);

        let key = KeyPair::generate_for(kind.alg()).expect("rcgen makes a server key");
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let params = CertificateParams::new(names).expect("the names are DNS names");
        let cert = params.signed_by(&key, &issuer).expect("the CA signs");
        Pki {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            ca_der: ca_cert.der().clone(),
            cert_der: cert.der().clone(),
            key_der: key.serialize_der(),
        }
    }

    /// The server's private key.
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}
