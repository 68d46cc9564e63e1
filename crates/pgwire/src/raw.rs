//! Protocol messages from raw bytes, for callers whose SQL and values are bytes that
//! need not be UTF-8 (pgbench scripts are read as SQL_ASCII): Query, Parse, Bind with
//! text parameters (NULL allowed), Describe portal, Execute, Sync. Nothing is checked
//! but the lengths; the server judges the text.

use bytes::{BufMut, BytesMut};

use crate::message::WireError;

fn len_prefixed(out: &mut BytesMut, tag: u8, body: impl FnOnce(&mut BytesMut)) {
    out.put_u8(tag);
    let at = out.len();
    out.put_i32(0);
    body(out);
    let len = (out.len() - at) as i32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn cstr(out: &mut BytesMut, s: &[u8]) -> Result<(), WireError> {
    if s.contains(&0) {
        return Err(WireError::Setup(
            "a message string contains a zero byte".into(),
        ));
    }
    out.put_slice(s);
    out.put_u8(0);
    Ok(())
}

/// Appends a simple-protocol Query with `sql`.
pub fn query(out: &mut BytesMut, sql: &[u8]) -> Result<(), WireError> {
    let mut r = Ok(());
    len_prefixed(out, b'Q', |o| r = cstr(o, sql));
    r
}

/// Appends a Parse of `sql` as statement `name` ("" unnamed), no parameter types.
pub fn parse(out: &mut BytesMut, name: &str, sql: &[u8]) -> Result<(), WireError> {
    let mut r = Ok(());
    len_prefixed(out, b'P', |o| {
        r = cstr(o, name.as_bytes()).and_then(|()| cstr(o, sql));
        o.put_i16(0);
    });
    r
}

/// Appends Bind of statement `name` to the unnamed portal with `params` as text (None:
/// NULL) and text results, then Describe portal (when `describe`) and Execute.
pub fn bind_execute<'a>(
    out: &mut BytesMut,
    name: &str,
    params: impl ExactSizeIterator<Item = Option<&'a [u8]>>,
    describe: bool,
) -> Result<(), WireError> {
    if params.len() > i16::MAX as usize {
        return Err(WireError::Setup("too many parameters".into()));
    }
    let mut r = Ok(());
    len_prefixed(out, b'B', |o| {
        o.put_u8(0); // the unnamed portal
        r = cstr(o, name.as_bytes());
        o.put_i16(0); // every parameter in text
        o.put_i16(params.len() as i16);
        for p in params {
            match p {
                None => o.put_i32(-1),
                Some(v) => {
                    o.put_i32(v.len() as i32);
                    o.put_slice(v);
                }
            }
        }
        o.put_i16(0); // every result column in text
    });
    r?;
    if describe {
        len_prefixed(out, b'D', |o| {
            o.put_u8(b'P');
            o.put_u8(0);
        });
    }
    len_prefixed(out, b'E', |o| {
        o.put_u8(0);
        o.put_i32(0);
    });
    Ok(())
}

/// Appends a Sync.
pub fn sync(out: &mut BytesMut) {
    len_prefixed(out, b'S', |_| {});
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_postgres_protocol_s() {
        let mut a = BytesMut::new();
        let mut b = BytesMut::new();
        query(&mut a, b"SELECT 1").unwrap();
        postgres_protocol::message::frontend::query("SELECT 1", &mut b).unwrap();
        parse(&mut a, "P_0", b"SELECT $1").unwrap();
        postgres_protocol::message::frontend::parse("P_0", "SELECT $1", std::iter::empty(), &mut b)
            .unwrap();
        sync(&mut a);
        postgres_protocol::message::frontend::sync(&mut b);
        assert_eq!(a, b);
        let mut c = BytesMut::new();
        bind_execute(&mut c, "P_0", [Some(&b"12"[..]), None].into_iter(), true).unwrap();
        // B, len, portal "", stmt "P_0", 0 formats, 2 params (2 bytes "12", NULL), 0 result formats
        let mut want = vec![b'B'];
        let body: Vec<u8> = [
            &[0u8][..],
            b"P_0\0",
            &[0, 0, 0, 2],
            &[0, 0, 0, 2],
            b"12",
            &[0xff, 0xff, 0xff, 0xff],
            &[0, 0],
        ]
        .concat();
        want.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        want.extend_from_slice(&body);
        want.extend_from_slice(&[b'D', 0, 0, 0, 6, b'P', 0]);
        want.extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
        assert_eq!(&c[..], &want[..]);
        assert!(query(&mut c, b"a\0b").is_err());
    }
}
