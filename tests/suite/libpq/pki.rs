//! Certificates made with the `openssl` command as PostgreSQL's documentation
//! ("Creating Certificates", 15) and common guides make them: the docs' quick
//! self-signed server certificate, the docs' root → intermediate → server chain
//! (`openssl x509 -req` without extensions: version-1 leaves), version-3 leaves
//! with and without SANs, IP SANs, wildcards, an expired and a revoked one from
//! `openssl ca` with a CRL file and a hashed CRL directory, and client
//! certificates and keys in every form libpq is handed (PEM, DER, PKCS#1,
//! PKCS#8, encrypted).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The password of every encrypted key the PKI makes.
pub const KEY_PASSWORD: &str = "key-pw-9";

/// A directory of certificates and keys (file names are listed in [`Pki::make`]).
pub struct Pki {
    pub dir: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .env("OPENSSL_CONF", "/etc/ssl/openssl.cnf")
        .output()
        .expect("the openssl command runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `openssl req -new -nodes -text`: a key NAME.key and a request NAME.csr for `subj`.
fn request(dir: &Path, name: &str, subj: &str) {
    let (csr, key) = (format!("{name}.csr"), format!("{name}.key"));
    openssl(
        dir,
        &[
            "req", "-new", "-nodes", "-text", "-out", &csr, "-keyout", &key, "-subj", subj,
        ],
    );
}

/// `openssl x509 -req -CA CA.crt -CAkey CA.key` as the docs sign: version 1 when
/// `ext` is None, else version 3 with the extension lines `ext`.
fn sign(dir: &Path, name: &str, ca: &str, ext: Option<&str>) {
    let (csr, crt) = (format!("{name}.csr"), format!("{name}.crt"));
    let (ca_crt, ca_key) = (format!("{ca}.crt"), format!("{ca}.key"));
    let ext_file = format!("{name}.ext");
    let mut args = vec![
        "x509",
        "-req",
        "-in",
        &csr,
        "-text",
        "-days",
        "365",
        "-CA",
        &ca_crt,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        &crt,
    ];
    if let Some(ext) = ext {
        fs::write(dir.join(&ext_file), ext).unwrap();
        args.extend_from_slice(&["-extfile", &ext_file]);
    }
    openssl(dir, &args);
}

/// A leaf NAME.crt/NAME.key for `subj` signed by CA (see [`sign`]).
fn leaf(dir: &Path, name: &str, subj: &str, ca: &str, ext: Option<&str>) {
    request(dir, name, subj);
    sign(dir, name, ca, ext);
}

/// A version-3 server leaf's extensions with `san` (None: no SAN).
fn server_ext(san: Option<&str>) -> String {
    let mut ext = String::from(
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    );
    if let Some(san) = san {
        ext.push_str(&format!("subjectAltName={san}\n"));
    }
    ext
}

fn cat(dir: &Path, out: &str, parts: &[&str]) {
    let mut text = String::new();
    for p in parts {
        text.push_str(&fs::read_to_string(dir.join(p)).unwrap());
    }
    fs::write(dir.join(out), text).unwrap();
}

impl Pki {
    /// Makes every certificate and key in `dir` (created, mode 0755 so the
    /// server's user reads the certificates; keys are 0600 and copied for the server).
    pub fn make(dir: &Path) -> Pki {
        fs::create_dir_all(dir).unwrap();
        let d = dir;
        // The docs' quick recipe: a self-signed server certificate, the client given it as its root.
        openssl(
            d,
            &[
                "req",
                "-new",
                "-x509",
                "-days",
                "365",
                "-nodes",
                "-text",
                "-out",
                "ss.crt",
                "-keyout",
                "ss.key",
                "-subj",
                "/CN=localhost",
            ],
        );
        // The same with SANs, as guides add them (-addext).
        openssl(
            d,
            &[
                "req",
                "-new",
                "-x509",
                "-days",
                "365",
                "-nodes",
                "-out",
                "ss-san.crt",
                "-keyout",
                "ss-san.key",
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ],
        );
        // The docs' chain: root (v3_ca, self-signed by x509 -signkey), intermediate (v3_ca).
        request(d, "root", "/CN=root.csdchar.test");
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "root.csr",
                "-text",
                "-days",
                "3650",
                "-extfile",
                "/etc/ssl/openssl.cnf",
                "-extensions",
                "v3_ca",
                "-signkey",
                "root.key",
                "-out",
                "root.crt",
            ],
        );
        request(d, "intermediate", "/CN=intermediate.csdchar.test");
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "intermediate.csr",
                "-text",
                "-days",
                "1825",
                "-extfile",
                "/etc/ssl/openssl.cnf",
                "-extensions",
                "v3_ca",
                "-CA",
                "root.crt",
                "-CAkey",
                "root.key",
                "-CAcreateserial",
                "-out",
                "intermediate.crt",
            ],
        );
        // Leaves: v1 (CA-signed without extensions, as the docs and most guides sign).
        leaf(d, "v1", "/CN=localhost", "root", None);
        leaf(d, "v1-ip", "/CN=127.0.0.1", "root", None);
        leaf(d, "chain-leaf", "/CN=localhost", "intermediate", None);
        cat(d, "chain.crt", &["chain-leaf.crt", "intermediate.crt"]);
        fs::copy(d.join("chain-leaf.key"), d.join("chain.key")).unwrap();
        cat(
            d,
            "root+intermediate.crt",
            &["root.crt", "intermediate.crt"],
        );
        // v3 leaves.
        leaf(
            d,
            "v3san",
            "/CN=localhost",
            "root",
            Some(&server_ext(Some("DNS:localhost,IP:127.0.0.1,IP:::1"))),
        );
        leaf(
            d,
            "cnonly",
            "/CN=localhost",
            "root",
            Some(&server_ext(None)),
        );
        leaf(
            d,
            "sanonly",
            "/O=csdchar",
            "root",
            Some(&server_ext(Some("DNS:localhost"))),
        );
        leaf(
            d,
            "sandns-cnip",
            "/CN=127.0.0.1",
            "root",
            Some(&server_ext(Some("DNS:localhost"))),
        );
        leaf(
            d,
            "ipsan",
            "/CN=db.csdchar.test",
            "root",
            Some(&server_ext(Some("IP:127.0.0.1"))),
        );
        leaf(
            d,
            "wild",
            "/CN=wild",
            "root",
            Some(&server_ext(Some("DNS:*.csdchar.test"))),
        );
        leaf(d, "wildcn", "/CN=*.csdchar.test", "root", None);
        leaf(
            d,
            "multi",
            "/CN=localhost",
            "root",
            Some(&server_ext(Some(
                "DNS:db1.csdchar.test,DNS:db2.csdchar.test,DNS:db3.csdchar.test",
            ))),
        );
        // Someone else's CA, and both roots in one file.
        openssl(
            d,
            &[
                "req",
                "-new",
                "-x509",
                "-days",
                "3650",
                "-nodes",
                "-out",
                "other-root.crt",
                "-keyout",
                "other-root.key",
                "-subj",
                "/CN=other-root",
            ],
        );
        cat(d, "both-roots.crt", &["other-root.crt", "root.crt"]);
        Self::ca_issued(d);
        Self::clients(d);
        // Keys 0600 (req writes them so already; said here for the copies' sake).
        for e in fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".key") || name.ends_with(".key.der") || name.ends_with(".pem") {
                set_mode(&p, 0o600);
            }
        }
        set_mode(d, 0o755);
        Pki {
            dir: d.to_path_buf(),
        }
    }

    /// Leaves issued through `openssl ca` (dates of its choosing, a database to
    /// revoke from): expired, revoked, a good one; the CRL as a file and a rehashed directory.
    fn ca_issued(d: &Path) {
        let ca = d.join("ca");
        fs::create_dir_all(ca.join("newcerts")).unwrap();
        fs::write(ca.join("index.txt"), "").unwrap();
        fs::write(ca.join("serial"), "1000\n").unwrap();
        fs::write(ca.join("crlnumber"), "1000\n").unwrap();
        let cnf = format!(
            "[ ca ]\ndefault_ca = root\n[ root ]\ndir = {ca}\ndatabase = $dir/index.txt\n\
             new_certs_dir = $dir/newcerts\nserial = $dir/serial\ncrlnumber = $dir/crlnumber\n\
             certificate = {d}/root.crt\nprivate_key = {d}/root.key\ndefault_md = sha256\n\
             default_days = 365\ndefault_crl_days = 30\npolicy = any\nunique_subject = no\n\
             [ any ]\ncommonName = supplied\n\
             [ leaf ]\nbasicConstraints = CA:FALSE\nsubjectAltName = DNS:localhost,IP:127.0.0.1\n",
            ca = ca.display(),
            d = d.display()
        );
        fs::write(d.join("ca.cnf"), cnf).unwrap();
        let issue = |name: &str, dates: &[&str]| {
            request(d, name, "/CN=localhost");
            let (csr, crt) = (format!("{name}.csr"), format!("{name}.crt"));
            let mut args = vec![
                "ca",
                "-batch",
                "-config",
                "ca.cnf",
                "-extensions",
                "leaf",
                "-in",
                &csr,
                "-out",
                &crt,
            ];
            args.extend_from_slice(dates);
            openssl(d, &args);
        };
        issue(
            "expired",
            &[
                "-startdate",
                "20200101000000Z",
                "-enddate",
                "20210101000000Z",
            ],
        );
        issue(
            "notyet",
            &[
                "-startdate",
                "20400101000000Z",
                "-enddate",
                "20410101000000Z",
            ],
        );
        issue("revoked", &[]);
        issue("good-ca", &[]);
        openssl(d, &["ca", "-config", "ca.cnf", "-revoke", "revoked.crt"]);
        openssl(
            d,
            &["ca", "-config", "ca.cnf", "-gencrl", "-out", "root.crl"],
        );
        // The same list as a version-1 CRL: `openssl ca -gencrl` without a crlnumber file.
        let v1_cnf = fs::read_to_string(d.join("ca.cnf"))
            .unwrap()
            .replace("crlnumber = $dir/crlnumber\n", "");
        fs::write(d.join("ca-v1crl.cnf"), v1_cnf).unwrap();
        openssl(
            d,
            &[
                "ca",
                "-config",
                "ca-v1crl.cnf",
                "-gencrl",
                "-out",
                "root-v1.crl",
            ],
        );
        openssl(
            d,
            &[
                "crl",
                "-in",
                "root.crl",
                "-outform",
                "DER",
                "-out",
                "root.crl.der",
            ],
        );
        // libpq's sslcrldir: a directory in OpenSSL's hashed layout (openssl rehash / c_rehash).
        let crldir = d.join("crldir");
        fs::create_dir_all(&crldir).unwrap();
        fs::copy(d.join("root.crl"), crldir.join("root.crl")).unwrap();
        openssl(d, &["rehash", crldir.to_str().unwrap()]);
        // A directory with the CRL but never hashed: OpenSSL finds nothing in it.
        let unhashed = d.join("crldir-unhashed");
        fs::create_dir_all(&unhashed).unwrap();
        fs::copy(d.join("root.crl"), unhashed.join("root.crl")).unwrap();
        // A CRL that is not one.
        fs::write(d.join("garbage.crl"), "not a CRL\n").unwrap();
    }

    /// Client CA (the server's ssl_ca_file) and client certificates and keys.
    fn clients(d: &Path) {
        openssl(
            d,
            &[
                "req",
                "-new",
                "-x509",
                "-days",
                "3650",
                "-nodes",
                "-out",
                "client-root.crt",
                "-keyout",
                "client-root.key",
                "-subj",
                "/CN=client-root",
            ],
        );
        // The docs: CN is the database user name; signed without extensions (v1).
        leaf(d, "client", "/CN=postgres", "client-root", None);
        leaf(d, "client-alice", "/CN=alice", "client-root", None);
        leaf(d, "client-other", "/CN=postgres", "other-root", None);
        openssl(
            d,
            &[
                "req",
                "-new",
                "-nodes",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-out",
                "client-ec.csr",
                "-keyout",
                "client-ec.key",
                "-subj",
                "/CN=postgres",
            ],
        );
        sign(d, "client-ec", "client-root", None);
        // The same certificate and key in other encodings.
        openssl(
            d,
            &[
                "x509",
                "-in",
                "client.crt",
                "-outform",
                "DER",
                "-out",
                "client.crt.der",
            ],
        );
        openssl(
            d,
            &[
                "pkcs8",
                "-topk8",
                "-nocrypt",
                "-in",
                "client.key",
                "-outform",
                "DER",
                "-out",
                "client.key.der",
            ],
        );
        openssl(
            d,
            &[
                "rsa",
                "-in",
                "client.key",
                "-traditional",
                "-out",
                "client-pkcs1.key",
            ],
        );
        let pass = format!("pass:{KEY_PASSWORD}");
        openssl(
            d,
            &[
                "pkcs8",
                "-topk8",
                "-in",
                "client.key",
                "-v2",
                "aes-256-cbc",
                "-passout",
                &pass,
                "-out",
                "client-enc.key",
            ],
        );
        openssl(
            d,
            &[
                "rsa",
                "-in",
                "client.key",
                "-aes256",
                "-traditional",
                "-passout",
                &pass,
                "-out",
                "client-enc-pkcs1.key",
            ],
        );
        openssl(
            d,
            &[
                "pkcs8",
                "-topk8",
                "-in",
                "client.key",
                "-v2",
                "aes-256-cbc",
                "-passout",
                &pass,
                "-outform",
                "DER",
                "-out",
                "client-enc.key.der",
            ],
        );
        // Certificate and key in one file (sslcert and sslkey both naming it).
        cat(d, "client-both.pem", &["client.crt", "client.key"]);
    }

    /// `name` in the PKI directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

pub fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}
