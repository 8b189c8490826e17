//! Test certificates made with the `openssl` command: a CA, leaf
//! certificates it signs (SAN `IP:127.0.0.1` and `DNS:localhost`, usable as
//! server and client), and PEM keystores (key and chain in one file, as
//! Kafka's `ssl.keystore.type=PEM` with `ssl.keystore.location` reads them).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run openssl (it must be on PATH)");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A certificate authority in a directory.
#[derive(Debug)]
pub struct Ca {
    dir: PathBuf,
    name: String,
    /// The CA certificate, PEM: a truststore.
    pub cert: PathBuf,
    key: PathBuf,
}

impl Ca {
    /// A new self-signed CA `CN=<name>` (EC P-256) whose files go in `dir`.
    pub fn new(dir: &Path, name: &str) -> Ca {
        std::fs::create_dir_all(dir).expect("the pki dir");
        let cert = dir.join(format!("{name}.pem"));
        let key = dir.join(format!("{name}.key"));
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN={name}"),
                "-keyout",
                &key.display().to_string(),
                "-out",
                &cert.display().to_string(),
            ],
        );
        Ca {
            dir: dir.to_owned(),
            name: name.to_owned(),
            cert,
            key,
        }
    }

    /// Issues a leaf certificate with subject `subject` (OpenSSL's
    /// `/CN=…/O=…` form) and writes a PEM keystore (key, then certificate)
    /// named `<file>.pem`; returns its path.
    pub fn issue(&self, file: &str, subject: &str) -> PathBuf {
        let key = self.dir.join(format!("{file}.key"));
        let csr = self.dir.join(format!("{file}.csr"));
        let crt = self.dir.join(format!("{file}.crt"));
        let ext = self.dir.join(format!("{file}.ext"));
        std::fs::write(
            &ext,
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n",
        )
        .expect("write the extensions");
        let s = |p: &PathBuf| p.display().to_string();
        openssl(
            &self.dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                subject,
                "-keyout",
                &s(&key),
                "-out",
                &s(&csr),
            ],
        );
        openssl(
            &self.dir,
            &[
                "x509",
                "-req",
                "-in",
                &s(&csr),
                "-CA",
                &s(&self.cert),
                "-CAkey",
                &s(&self.key),
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &s(&ext),
                "-out",
                &s(&crt),
            ],
        );
        let keystore = self.dir.join(format!("{file}.pem"));
        let mut pem = std::fs::read_to_string(&key).expect("read the key");
        pem.push_str(&std::fs::read_to_string(&crt).expect("read the certificate"));
        std::fs::write(&keystore, pem).expect("write the keystore");
        keystore
    }

    /// The CA's name (its CN).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Kafka's properties of an mTLS controller listener named CONTROLLER with
/// `keystore` and `truststore` (PEM), `ssl.client.auth=required`.
pub fn mtls_properties(keystore: &Path, truststore: &Path) -> Vec<(String, String)> {
    [
        (
            "listener.security.protocol.map",
            "CONTROLLER:SSL".to_owned(),
        ),
        ("ssl.keystore.type", "PEM".to_owned()),
        ("ssl.keystore.location", keystore.display().to_string()),
        ("ssl.truststore.type", "PEM".to_owned()),
        ("ssl.truststore.location", truststore.display().to_string()),
        ("ssl.client.auth", "required".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// A client of our controllers over TLS: `truststore` trusted, `keystore`
/// (if any) presented as the client certificate, host names checked, 5 s
/// connect and request timeouts.
pub fn client_config(
    keystore: Option<&Path>,
    truststore: &Path,
) -> kraft_controller::wire::client::ClientConfig {
    use kraft_controller::{
        config::security::{ClientAuth, KeyMaterial, SslSettings, TlsVersion, TrustMaterial},
        wire::tls::TlsClient,
    };
    let settings = SslSettings {
        key: keystore.map(|k| KeyMaterial::File(k.to_owned())),
        trust: Some(TrustMaterial::File(truststore.to_owned())),
        client_auth: ClientAuth::None,
        enabled_protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        cipher_suites: Vec::new(),
        endpoint_identification: true,
    };
    kraft_controller::wire::client::ClientConfig {
        connect_timeout: std::time::Duration::from_secs(5),
        request_timeout: std::time::Duration::from_secs(5),
        tls: Some(std::sync::Arc::new(
            TlsClient::client(settings).expect("client TLS loads"),
        )),
        ..Default::default()
    }
}
