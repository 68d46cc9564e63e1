//! What a connection attempt came to, in terms both clients can be held to: it
//! connected (to which server, over TLS or not), or it was refused for causes
//! named by [`Cause`]. [`libpq_causes`] reads libpq's (psql's) messages; a
//! csdchar runner supplies its own reading of csdchar's messages into the same
//! causes, and the table's assertions stay the same.

/// Which server a connection reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reached {
    /// The TLS-only server.
    Tls,
    Primary,
    Standby,
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    // --- options and files, before any connection
    /// An option libpq does not know (e.g. 16-only keys on 15).
    UnknownOption,
    /// A value of a known option is not one it takes.
    BadValue,
    /// A URI libpq cannot parse.
    UriSyntax,
    /// A connection string that is not key=value.
    ConninfoSyntax,
    /// Host and port lists of different lengths.
    HostPortCount,
    /// `hostaddr` is not a numeric address.
    BadHostaddr,
    /// ssl_min_protocol_version above ssl_max_protocol_version.
    ProtocolRange,
    /// The service is not in any service file.
    ServiceNotFound,
    /// A service file named by PGSERVICEFILE does not exist.
    ServiceFileMissing,
    /// A service file line libpq cannot read.
    ServiceFileSyntax,
    // --- reaching the server
    /// Host name did not resolve.
    HostLookup,
    ConnectionRefused,
    /// A Unix socket that is not there.
    NoSuchSocket,
    Timeout,
    /// requirepeer names another user than the server's.
    RequirePeer,
    /// gssencmode=require without a GSSAPI-encrypted connection.
    GssEncRequired,
    // --- TLS, client side files
    /// sslmode=verify-* and no root certificate file.
    RootCertMissing,
    /// The client key's permissions are too open.
    KeyPermissions,
    /// sslcert present but no key file.
    KeyMissing,
    /// The key file cannot be read (format or wrong/missing password).
    KeyUnreadable,
    /// The certificate file cannot be read.
    CertUnreadable,
    /// The root certificate file cannot be read.
    RootCertUnreadable,
    /// The CRL file or directory cannot be read.
    CrlUnreadable,
    // --- TLS, the server's certificate
    /// OpenSSL's verification failed (libpq 15 says only this; the reason is one of the next).
    CertVerifyFailed,
    /// Verify failed: self-signed certificate (leaf or in the chain) not trusted.
    SelfSigned,
    /// Verify failed: issuer not found among the roots.
    UnknownIssuer,
    /// Verify failed: expired.
    Expired,
    /// Verify failed: not yet valid.
    NotYetValid,
    /// Verify failed: revoked.
    Revoked,
    /// Verify failed: CRL checking is on and a CA in the chain has no CRL.
    CrlMissing,
    /// The certificate's names do not match the host.
    HostMismatch,
    // --- TLS, negotiation
    /// The server does not do TLS and it was required.
    ServerNoTls,
    /// channel_binding=require without TLS (or without SCRAM).
    ChannelBinding,
    /// No protocol version both sides allow.
    ProtocolVersion,
    /// The server closed the connection during the TLS handshake (e.g. direct TLS to a server without it).
    TlsClosedByServer,
    /// require_auth (16) does not allow the method the server asked for.
    AuthNotAllowed,
    /// The server refused the client's certificate (its CA unknown to the server).
    ClientCertRejected,
    // --- the server's decision
    /// pg_hba has no line for a plain connection (TLS-only server).
    HbaNoEncryption,
    /// pg_hba has no line for this TLS connection.
    HbaNoLine,
    /// `cert` login without a client certificate.
    ClientCertRequired,
    /// `cert` login with a certificate for another user.
    CertUserMismatch,
    /// No password and the server asked for one.
    NoPassword,
    PasswordFailed,
    /// libpq ignored a password file with open permissions (a warning, with the refusal).
    PassfilePermissions,
    DatabaseMissing,
    RoleMissing,
    // --- target_session_attrs
    /// read-write wanted, session read-only.
    SessionReadOnly,
    /// read-only wanted, session not read-only.
    SessionNotReadOnly,
    /// primary wanted, server in hot standby.
    InHotStandby,
    /// standby wanted, server not in hot standby.
    NotInHotStandby,
}

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Connected to `reached`, over TLS when `tls`; `check` is the case's check query's answer.
    Connects {
        reached: Reached,
        tls: bool,
        check: Option<String>,
    },
    /// Refused, naming these causes (sorted).
    Refuses(Vec<Cause>),
}

/// The causes libpq's message names (psql's stderr; English messages).
pub fn libpq_causes(msg: &str) -> Vec<Cause> {
    use Cause::*;
    const PATTERNS: &[(Cause, &[&str])] = &[
        (
            UnknownOption,
            &["invalid connection option", "invalid URI query parameter"],
        ),
        (
            BadValue,
            &[
                "invalid sslmode value",
                "invalid integer value",
                "invalid target_session_attrs value",
                "invalid ssl_min_protocol_version value",
                "invalid ssl_max_protocol_version value",
                "invalid gssencmode value",
                "invalid channel_binding value",
                "invalid load_balance_hosts value",
                "invalid sslcertmode value",
                "invalid port number",
                "invalid require_auth value",
                "invalid value for parameter",
                "invalid sslnegotiation value",
                // Newer libpq quotes the option's name.
                "invalid \"ssl_min_protocol_version\" value",
                "invalid \"ssl_max_protocol_version\" value",
                // psycopg checks these itself, before libpq.
                "bad value for",
            ],
        ),
        (
            UriSyntax,
            &[
                "in URI",
                "invalid percent-encoded token",
                "forbidden value %00",
                "in URI query parameter",
            ],
        ),
        (
            ConninfoSyntax,
            &["missing \"=\" after", "unterminated quoted string"],
        ),
        (HostPortCount, &["could not match"]),
        (BadHostaddr, &["could not parse network address"]),
        (ProtocolRange, &["invalid SSL protocol version range"]),
        (ServiceNotFound, &["definition of service"]),
        (ServiceFileMissing, &["service file", "not found"]),
        (
            ServiceFileSyntax,
            &[
                "syntax error in service file",
                "nested service specifications",
            ],
        ),
        (
            HostLookup,
            &["could not translate host name", "failed to resolve host"],
        ),
        (ConnectionRefused, &["Connection refused"]),
        (NoSuchSocket, &["on socket", "No such file or directory"]),
        (Timeout, &["timeout expired"]),
        (RequirePeer, &["requirepeer"]),
        (
            GssEncRequired,
            &[
                "GSSAPI encryption required",
                "gssencmode value \"require\" invalid",
            ],
        ),
        (
            RootCertMissing,
            &["root certificate file", "does not exist"],
        ),
        (KeyPermissions, &["has group or world access; file must"]),
        (
            KeyMissing,
            &["certificate present, but not private key file"],
        ),
        (KeyUnreadable, &["could not load private key file"]),
        (CertUnreadable, &["could not read certificate file"]),
        (
            RootCertUnreadable,
            &["could not read root certificate file"],
        ),
        (
            CrlUnreadable,
            &["could not load SSL certificate revocation list", "SSL CRL"],
        ),
        (CertVerifyFailed, &["certificate verify failed"]),
        (
            SelfSigned,
            &["self-signed certificate", "self signed certificate"],
        ),
        (
            UnknownIssuer,
            &[
                "unable to get local issuer certificate",
                "unable to get issuer certificate",
                "unable to verify the first certificate",
            ],
        ),
        (Expired, &["certificate has expired"]),
        (NotYetValid, &["certificate is not yet valid"]),
        (Revoked, &["certificate revoked"]),
        (CrlMissing, &["unable to get certificate CRL"]),
        (
            HostMismatch,
            &[
                "does not match host name",
                "could not get server's host name from server certificate",
            ],
        ),
        (ServerNoTls, &["server does not support SSL"]),
        (TlsClosedByServer, &["unexpected eof while reading"]),
        (AuthNotAllowed, &["authentication method requirement"]),
        (ChannelBinding, &["channel binding required"]),
        (
            ProtocolVersion,
            &[
                "unsupported protocol",
                "no protocols available",
                "tlsv1 alert protocol version",
                "wrong version number",
            ],
        ),
        (
            ClientCertRejected,
            &[
                "tlsv1 alert unknown ca",
                "sslv3 alert bad certificate",
                "alert certificate",
            ],
        ),
        (HbaNoEncryption, &["no encryption"]),
        (HbaNoLine, &["SSL encryption"]),
        (
            ClientCertRequired,
            &["connection requires a valid client certificate"],
        ),
        (CertUserMismatch, &["certificate authentication failed"]),
        (NoPassword, &["no password supplied"]),
        (PasswordFailed, &["password authentication failed"]),
        (
            PassfilePermissions,
            &["has group or world access; permissions should be"],
        ),
        (DatabaseMissing, &["database \"", "does not exist"]),
        (RoleMissing, &["role \"", "does not exist"]),
        (SessionReadOnly, &["session is read-only"]),
        (SessionNotReadOnly, &["session is not read-only"]),
        (InHotStandby, &["server is in hot standby mode"]),
        (NotInHotStandby, &["server is not in hot standby mode"]),
    ];
    let mut found = Vec::new();
    for line in msg.lines() {
        for (cause, pats) in PATTERNS {
            // Patterns of two parts (e.g. "database \"" and "does not exist") must both be on the line.
            let hit = match *cause {
                ServiceFileMissing | RootCertMissing | DatabaseMissing | RoleMissing
                | NoSuchSocket => pats.iter().all(|p| line.contains(p)),
                _ => pats.iter().any(|p| line.contains(p)),
            };
            if hit && !found.contains(cause) {
                found.push(*cause);
            }
        }
    }
    // "no pg_hba.conf entry ..., SSL encryption" is HbaNoLine; "..., no encryption" HbaNoEncryption.
    if found.contains(&HbaNoEncryption) {
        found.retain(|c| *c != HbaNoLine);
    }
    // The root file line ("root certificate file ... does not exist") is not a missing database.
    if found.contains(&RootCertMissing) {
        found.retain(|c| *c != DatabaseMissing && *c != RoleMissing);
    }
    // A key-file line is not also a passfile warning and vice versa: the two patterns differ.
    found.sort();
    found
}
