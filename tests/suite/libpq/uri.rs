//! libpq's parse of URIs and keyword/value strings (PQconninfoParse, no
//! environment, no defaults), in the form of libpq's own URI regression test:
//! the options given, in libpq's option order, as `key='value'`, then
//! `(local)` or `(inet)`; or libpq's error. The URI inputs are the list of
//! src/interfaces/libpq/test/regress.in (PostgreSQL 15; t/001_uri.pl from 16
//! has the same inputs and outcomes plus three sslmode rows, here too); the
//! rest are added. Outcomes are libpq 15.18's here, checked by
//! `uri_parse_table_is_libpqs` through libpq itself.

/// libpq's parse of an input: the options it holds, or its error message.
pub type Parse = Result<&'static str, &'static str>;

/// (input, libpq's parse).
pub const PARSE_TABLE: &[(&str, Parse)] = &[
    (
        r#"postgresql://uri-user:secret@host:12345/db"#,
        Ok(r#"user='uri-user' password='secret' dbname='db' host='host' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://uri-user@host:12345/db"#,
        Ok(r#"user='uri-user' dbname='db' host='host' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://uri-user@host/db"#,
        Ok(r#"user='uri-user' dbname='db' host='host' (inet)"#),
    ),
    (
        r#"postgresql://host:12345/db"#,
        Ok(r#"dbname='db' host='host' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://host/db"#,
        Ok(r#"dbname='db' host='host' (inet)"#),
    ),
    (
        r#"postgresql://uri-user@host:12345/"#,
        Ok(r#"user='uri-user' host='host' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://uri-user@host/"#,
        Ok(r#"user='uri-user' host='host' (inet)"#),
    ),
    (
        r#"postgresql://uri-user@"#,
        Ok(r#"user='uri-user' (local)"#),
    ),
    (
        r#"postgresql://host:12345/"#,
        Ok(r#"host='host' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://host:12345"#,
        Ok(r#"host='host' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://host/db"#,
        Ok(r#"dbname='db' host='host' (inet)"#),
    ),
    (r#"postgresql://host/"#, Ok(r#"host='host' (inet)"#)),
    (r#"postgresql://host"#, Ok(r#"host='host' (inet)"#)),
    (r#"postgresql://"#, Ok(r#"(local)"#)),
    (
        r#"postgresql://?hostaddr=127.0.0.1"#,
        Ok(r#"hostaddr='127.0.0.1' (inet)"#),
    ),
    (
        r#"postgresql://example.com?hostaddr=63.1.2.4"#,
        Ok(r#"host='example.com' hostaddr='63.1.2.4' (inet)"#),
    ),
    (r#"postgresql://%68ost/"#, Ok(r#"host='host' (inet)"#)),
    (
        r#"postgresql://host/db?user=uri-user"#,
        Ok(r#"user='uri-user' dbname='db' host='host' (inet)"#),
    ),
    (
        r#"postgresql://host/db?user=uri-user&port=12345"#,
        Ok(r#"user='uri-user' dbname='db' host='host' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://host/db?u%73er=someotheruser&port=12345"#,
        Ok(r#"user='someotheruser' dbname='db' host='host' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://host/db?u%7aer=someotheruser&port=12345"#,
        Err(r#"invalid URI query parameter: "uzer""#),
    ),
    (
        r#"postgresql://host:12345?user=uri-user"#,
        Ok(r#"user='uri-user' host='host' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://host?user=uri-user"#,
        Ok(r#"user='uri-user' host='host' (inet)"#),
    ),
    (r#"postgresql://host?"#, Ok(r#"host='host' (inet)"#)),
    (
        r#"postgresql://[::1]:12345/db"#,
        Ok(r#"dbname='db' host='::1' port='12345' (inet)"#),
    ),
    (
        r#"postgresql://[::1]/db"#,
        Ok(r#"dbname='db' host='::1' (inet)"#),
    ),
    (
        r#"postgresql://[2001:db8::1234]/"#,
        Ok(r#"host='2001:db8::1234' (inet)"#),
    ),
    (
        r#"postgresql://[200z:db8::1234]/"#,
        Ok(r#"host='200z:db8::1234' (inet)"#),
    ),
    (r#"postgresql://[::1]"#, Ok(r#"host='::1' (inet)"#)),
    (r#"postgres://"#, Ok(r#"(local)"#)),
    (r#"postgres:///"#, Ok(r#"(local)"#)),
    (r#"postgres:///db"#, Ok(r#"dbname='db' (local)"#)),
    (
        r#"postgres://uri-user@/db"#,
        Ok(r#"user='uri-user' dbname='db' (local)"#),
    ),
    (
        r#"postgres://?host=/path/to/socket/dir"#,
        Ok(r#"host='/path/to/socket/dir' (local)"#),
    ),
    (
        r#"postgresql://host?uzer="#,
        Err(r#"invalid URI query parameter: "uzer""#),
    ),
    (
        r#"postgre://"#,
        Err(r#"missing "=" after "postgre://" in connection info string"#),
    ),
    (
        r#"postgres://[::1"#,
        Err(
            r#"end of string reached when looking for matching "]" in IPv6 host address in URI: "postgres://[::1""#,
        ),
    ),
    (
        r#"postgres://[]"#,
        Err(r#"IPv6 host address may not be empty in URI: "postgres://[]""#),
    ),
    (
        r#"postgres://[::1]z"#,
        Err(
            r#"unexpected character "z" at position 17 in URI (expected ":" or "/"): "postgres://[::1]z""#,
        ),
    ),
    (
        r#"postgresql://host?zzz"#,
        Err(r#"missing key/value separator "=" in URI query parameter: "zzz""#),
    ),
    (
        r#"postgresql://host?value1&value2"#,
        Err(r#"missing key/value separator "=" in URI query parameter: "value1""#),
    ),
    (
        r#"postgresql://host?key=key=value"#,
        Err(r#"extra key/value separator "=" in URI query parameter: "key""#),
    ),
    (
        r#"postgres://host?dbname=%XXfoo"#,
        Err(r#"invalid percent-encoded token: "%XXfoo""#),
    ),
    (
        r#"postgresql://a%00b"#,
        Err(r#"forbidden value %00 in percent-encoded value: "a%00b""#),
    ),
    (
        r#"postgresql://%zz"#,
        Err(r#"invalid percent-encoded token: "%zz""#),
    ),
    (
        r#"postgresql://%1"#,
        Err(r#"invalid percent-encoded token: "%1""#),
    ),
    (
        r#"postgresql://%"#,
        Err(r#"invalid percent-encoded token: "%""#),
    ),
    (r#"postgres://@host"#, Ok(r#"host='host' (inet)"#)),
    (r#"postgres://host:/"#, Ok(r#"host='host' (inet)"#)),
    (r#"postgres://:12345/"#, Ok(r#"port='12345' (local)"#)),
    (
        r#"postgres://otheruser@?host=/no/such/directory"#,
        Ok(r#"user='otheruser' host='/no/such/directory' (local)"#),
    ),
    (
        r#"postgres://otheruser@/?host=/no/such/directory"#,
        Ok(r#"user='otheruser' host='/no/such/directory' (local)"#),
    ),
    (
        r#"postgres://otheruser@:12345?host=/no/such/socket/path"#,
        Ok(r#"user='otheruser' host='/no/such/socket/path' port='12345' (local)"#),
    ),
    (
        r#"postgres://otheruser@:12345/db?host=/path/to/socket"#,
        Ok(r#"user='otheruser' dbname='db' host='/path/to/socket' port='12345' (local)"#),
    ),
    (
        r#"postgres://:12345/db?host=/path/to/socket"#,
        Ok(r#"dbname='db' host='/path/to/socket' port='12345' (local)"#),
    ),
    (
        r#"postgres://:12345?host=/path/to/socket"#,
        Ok(r#"host='/path/to/socket' port='12345' (local)"#),
    ),
    (
        r#"postgres://%2Fvar%2Flib%2Fpostgresql/dbname"#,
        Ok(r#"dbname='dbname' host='/var/lib/postgresql' (local)"#),
    ),
    (
        r#"postgresql://host?sslmode=disable"#,
        Ok(r#"host='host' sslmode='disable' (inet)"#),
    ),
    (
        r#"postgresql://host?sslmode=prefer"#,
        Ok(r#"host='host' sslmode='prefer' (inet)"#),
    ),
    // Added here: host lists, escapes, repeated keys, keyword/value quoting.
    (
        r#"postgresql://host?sslmode=verify-full"#,
        Ok(r#"host='host' sslmode='verify-full' (inet)"#),
    ),
    (
        r#"postgresql://h1:1,h2:2/db"#,
        Ok(r#"dbname='db' host='h1,h2' port='1,2' (inet)"#),
    ),
    (
        r#"postgresql://h1,h2:2/db"#,
        Ok(r#"dbname='db' host='h1,h2' port=',2' (inet)"#),
    ),
    (
        r#"postgresql://[::1]:1,[::2]/db"#,
        Ok(r#"dbname='db' host='::1,::2' port='1,' (inet)"#),
    ),
    (
        r#"postgresql://u%40x:p%3Aw@h/d"#,
        Ok(r#"user='u@x' password='p:w' dbname='d' host='h' (inet)"#),
    ),
    (
        r#"postgresql://h/d?application_name=a%20b&options=-c%20x%3Dy"#,
        Ok(r#"dbname='d' host='h' options='-c x=y' application_name='a b' (inet)"#),
    ),
    (
        r#"postgresql://h/d?host=other"#,
        Ok(r#"dbname='d' host='other' (inet)"#),
    ),
    (
        r#"postgresql://h/d?dbname=e"#,
        Ok(r#"dbname='e' host='h' (inet)"#),
    ),
    (
        r#"postgresql://h/d?port=1&port=2"#,
        Ok(r#"dbname='d' host='h' port='2' (inet)"#),
    ),
    (
        r#"postgresql://h:99999/d"#,
        Ok(r#"dbname='d' host='h' port='99999' (inet)"#),
    ),
    (
        r#"postgresql://h/d?sslmode=bogus"#,
        Ok(r#"dbname='d' host='h' sslmode='bogus' (inet)"#),
    ),
    (
        r#"host=a port=1 dbname = 'x y'"#,
        Ok(r#"dbname='x y' host='a' port='1' (inet)"#),
    ),
    (r#"host='a\'b'"#, Ok(r#"host='a'b' (inet)"#)),
    (r#"host=a host=b"#, Ok(r#"host='b' (inet)"#)),
    (
        r#"dbname=postgresql://x/y"#,
        Ok(r#"dbname='postgresql://x/y' (local)"#),
    ),
    (r#"=x"#, Err(r#"invalid connection option """#)),
    (r#"host=a   "#, Ok(r#"host='a' (inet)"#)),
    (r#"host="#, Ok(r#"(local)"#)),
    (
        r#"application_name=a\ b"#,
        Ok(r#"application_name='a b' (local)"#),
    ),
    (
        r#"host=a nosuchkey=1"#,
        Err(r#"invalid connection option "nosuchkey""#),
    ),
    (
        r#"host='a"#,
        Err(r#"unterminated quoted string in connection info string"#),
    ),
    (
        r#"host=a port"#,
        Err(r#"missing "=" after "port" in connection info string"#),
    ),
    (r#"  host  =  a  "#, Ok(r#"host='a' (inet)"#)),
    (
        r#"postgresql://h/d?nosuchkey=1"#,
        Err(r#"invalid URI query parameter: "nosuchkey""#),
    ),
];

/// A Python script reading one input a line and printing libpq's parse as
/// `OK\t...` or `ERR\t...` (ctypes on libpq.so.5: no build step, no libpq-dev).
pub const LIBPQ_PARSE_PY: &str = r#"
import ctypes, sys
pq = ctypes.CDLL("libpq.so.5")
class Opt(ctypes.Structure):
    _fields_ = [("keyword", ctypes.c_char_p), ("envvar", ctypes.c_char_p),
                ("compiled", ctypes.c_char_p), ("val", ctypes.c_char_p),
                ("label", ctypes.c_char_p), ("dispchar", ctypes.c_char_p),
                ("dispsize", ctypes.c_int)]
pq.PQconninfoParse.restype = ctypes.POINTER(Opt)
pq.PQconninfoParse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
pq.PQconninfoFree.argtypes = [ctypes.POINTER(Opt)]
for line in sys.stdin.read().split("\n")[:-1]:
    err = ctypes.c_void_p()
    opts = pq.PQconninfoParse(line.encode(), ctypes.byref(err))
    if not opts:
        msg = ctypes.cast(err, ctypes.c_char_p).value.decode().strip() if err.value else ""
        print("ERR\t" + msg.replace("\n", " / "))
        continue
    out, local, i = [], True, 0
    while opts[i].keyword:
        k, v = opts[i].keyword.decode(), opts[i].val
        if v:
            v = v.decode()
            out.append(k + "='" + v + "'")
            if k == "host":
                local = v.startswith("/")
            if k == "hostaddr":
                local = False
        i += 1
    pq.PQconninfoFree(opts)
    out.append("(local)" if local else "(inet)")
    print("OK\t" + " ".join(out))
"#;
