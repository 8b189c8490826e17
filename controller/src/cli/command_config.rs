//! `--command-config FILE` of the admin commands, as Kafka's tools take it:
//! a client properties file with `security.protocol` (PLAINTEXT or SSL) and
//! the `ssl.*` keys of `config::security`. It owns reading that file into the
//! TLS client of the admin connections; it must not speak the protocol.

use std::{collections::BTreeMap, path::Path, sync::Arc};

use crate::{
    config::security::{SecurityProtocol, parse_ssl},
    wire::tls::TlsClient,
};

/// The TLS client `path` asks for (`None`: `security.protocol` PLAINTEXT or
/// unset).
///
/// Errors: one line naming the file and what is wrong: unreadable,
/// SASL or an unknown protocol, an `ssl.*` value that cannot be used, PEM
/// files that do not load.
pub fn load(path: &Path) -> Result<Option<Arc<TlsClient>>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut map: BTreeMap<String, String> = java_properties::read(std::io::BufReader::new(file))
        .map_err(|e| format!("reading {}: {e}", path.display()))?
        .into_iter()
        .collect();
    let protocol = match map.remove("security.protocol") {
        None => SecurityProtocol::Plaintext,
        Some(p) => SecurityProtocol::parse(&p)
            .map_err(|e| format!("{}: security.protocol: {e}", path.display()))?,
    };
    match protocol {
        SecurityProtocol::Plaintext => Ok(None),
        SecurityProtocol::Ssl => {
            let settings = parse_ssl(&mut map, "", "the admin client", false)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            let tls =
                TlsClient::client(settings).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(Some(Arc::new(tls)))
        }
    }
}
