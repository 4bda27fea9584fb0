//! gRPC over TLS with tonic's own TLS: tonic-health's service and client.

use crate::Pki;
use std::net::SocketAddr;
use tonic::transport::{
    Certificate, Channel, ClientTlsConfig, Endpoint, Identity, Server, ServerTlsConfig,
};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

/// Serves the health service over TLS with `pki`'s certificate (on the
/// process's default crypto provider, as tonic's server takes it).
pub async fn serve(addr: SocketAddr, pki: &Pki) -> Result<(), tonic::transport::Error> {
    let (_reporter, health) = tonic_health::server::health_reporter();
    Server::builder()
        .tls_config(
            ServerTlsConfig::new().identity(Identity::from_pem(&pki.cert_pem, &pki.key_pem)),
        )?
        .add_service(health)
        .serve(addr)
        .await
}

/// A channel to `url` (`https://name:port`) that trusts the platform's
/// roots (tonic's native roots: the files rustls-native-certs reads) and
/// `pki`'s CA.
pub async fn connect(url: &'static str, pki: &Pki) -> Result<Channel, tonic::transport::Error> {
    let tls = ClientTlsConfig::new()
        .with_native_roots()
        .ca_certificate(Certificate::from_pem(&pki.ca_pem));
    Endpoint::from_static(url)
        .tls_config(tls)?
        .connect_timeout(std::time::Duration::from_millis(500))
        .timeout(std::time::Duration::from_millis(500))
        .connect()
        .await
}

/// Asks the server on `channel` whether it serves.
pub async fn check(channel: Channel) -> Result<ServingStatus, tonic::Status> {
    let reply = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await?;
    Ok(reply.into_inner().status())
}
