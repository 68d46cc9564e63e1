//! csdchar's PostgreSQL and openGauss client, the role postgres-protocol plays under
//! tokio-postgres: where to connect ([`conn`]: connection strings and URLs completed from
//! libpq's `PG*` variables, [`conn::Transport`]), TLS with libpq's sslmodes ([`tls`]),
//! authentication including openGauss's methods ([`auth`]), the blocking wire connection
//! and reply parsing the measured loop drives ([`wire`]), the tokio-postgres control
//! connection ([`client::connect`]), its error ([`error::DbError`]), where `PG*` variables
//! come from ([`env`]) and the server's dialect ([`dialect`]).
//!
//! Depends on no other csdchar crate: everything here is about talking to a server,
//! nothing about what is measured.

pub mod auth;
pub mod client;
pub mod conn;
pub mod dialect;
pub mod env;
pub mod error;
pub mod message;
pub mod options;
pub mod raw;
pub mod service;
pub mod tls;
pub mod verify;
pub mod wire;
