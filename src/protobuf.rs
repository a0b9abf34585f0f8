//! Just enough of the protobuf wire format to read one field out of a
//! message, for identities that systems store as protobuf (HBase's master
//! `ServerName`, HDFS's `ActiveNodeInfo`). No schema: fields are numbers.
//!
//! HBase prefixes its znode data with a magic byte `0xFF`, a big-endian
//! int32 length and that many bytes of server id, then `PBUF`;
//! [`strip_hbase_prefix`] removes it.

/// A field's value as the wire carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// A string, bytes or a nested message: the wire cannot tell.
    Bytes(&'a [u8]),
}

impl Value<'_> {
    /// The value as label text: numbers in decimal, bytes as UTF-8 when
    /// they are text, `None` for binary (never put in a label).
    pub fn text(&self) -> Option<String> {
        match self {
            Value::Varint(v) | Value::Fixed64(v) => Some(v.to_string()),
            Value::Fixed32(v) => Some(v.to_string()),
            Value::Bytes(b) => std::str::from_utf8(b)
                .ok()
                .filter(|s| !s.chars().any(char::is_control))
                .map(str::to_owned),
        }
    }
}

fn varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*at)?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The first occurrence of field `number` in `message`; `None` when absent
/// or when the message is not well-formed protobuf.
pub fn field(message: &[u8], number: u64) -> Option<Value<'_>> {
    let mut at = 0;
    while at < message.len() {
        let key = varint(message, &mut at)?;
        let value = match key & 7 {
            0 => Value::Varint(varint(message, &mut at)?),
            1 => {
                let bytes = message.get(at..at + 8)?;
                at += 8;
                Value::Fixed64(u64::from_le_bytes(bytes.try_into().ok()?))
            }
            2 => {
                let len = usize::try_from(varint(message, &mut at)?).ok()?;
                let bytes = message.get(at..at.checked_add(len)?)?;
                at += len;
                Value::Bytes(bytes)
            }
            5 => {
                let bytes = message.get(at..at + 4)?;
                at += 4;
                Value::Fixed32(u32::from_le_bytes(bytes.try_into().ok()?))
            }
            _ => return None,
        };
        if key >> 3 == number {
            return Some(value);
        }
    }
    None
}

/// The field at `path` (field numbers, outermost first), descending into
/// nested messages.
pub fn path<'a>(message: &'a [u8], path: &[u64]) -> Option<Value<'a>> {
    let (&last, outer) = path.split_last()?;
    let mut current = message;
    for number in outer {
        match field(current, *number)? {
            Value::Bytes(nested) => current = nested,
            _ => return None,
        }
    }
    field(current, last)
}

/// The protobuf part of HBase znode data: after `0xFF`, a big-endian int32
/// length, the server id and `PBUF`. Data without the prefix is returned
/// as it is.
pub fn strip_hbase_prefix(data: &[u8]) -> &[u8] {
    let Some(rest) = data.strip_prefix(&[0xff]) else {
        return data;
    };
    let Some(len) = rest
        .get(..4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(i32::from_be_bytes)
        .and_then(|n| usize::try_from(n).ok())
    else {
        return data;
    };
    let after_id = rest.get(4 + len..).unwrap_or_default();
    after_id.strip_prefix(b"PBUF").unwrap_or(after_id)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Encodes a varint (the test side of the wire format).
    pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    pub fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
        put_varint(out, number << 3 | 2);
        put_varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }

    pub fn put_uint(out: &mut Vec<u8>, number: u64, v: u64) {
        put_varint(out, number << 3);
        put_varint(out, v);
    }

    /// HBase's `/hbase/master` payload as HBase 2.6 writes it: its
    /// metadata prefix carries an 8-byte salt after the process id
    /// (`ZKMetadata.appendMetaData`), counted in the id length.
    pub fn hbase_master(host: &str, port: u64, start_code: u64) -> Vec<u8> {
        let mut server_name = Vec::new();
        put_bytes(&mut server_name, 1, host.as_bytes());
        put_uint(&mut server_name, 2, port);
        put_uint(&mut server_name, 3, start_code);
        let mut master = Vec::new();
        put_bytes(&mut master, 1, &server_name);
        put_uint(&mut master, 2, 0); // rpc_version
        put_uint(&mut master, 3, 16010); // info_port
        let (id, salt) = (b"master:16000", [0x5a, 0x17, 0xc0, 0xff, 0xee, 1, 2, 3]);
        let mut data = vec![0xff];
        data.extend_from_slice(&i32::try_from(id.len() + salt.len()).unwrap().to_be_bytes());
        data.extend_from_slice(id);
        data.extend_from_slice(&salt);
        data.extend_from_slice(b"PBUF");
        data.extend_from_slice(&master);
        data
    }

    /// HDFS's `ActiveStandbyElectorLock` payload (`ActiveNodeInfo`).
    pub fn hdfs_active(nameservice: &str, namenode: &str, host: &str) -> Vec<u8> {
        let mut info = Vec::new();
        put_bytes(&mut info, 1, nameservice.as_bytes());
        put_bytes(&mut info, 2, namenode.as_bytes());
        put_bytes(&mut info, 3, host.as_bytes());
        put_uint(&mut info, 4, 8020);
        put_uint(&mut info, 5, 8019);
        info
    }

    #[test]
    fn reads_fields_of_real_layouts() {
        let hbase = hbase_master("m1.example.com", 16000, 1_700_000_000_123);
        let pb = strip_hbase_prefix(&hbase);
        assert_eq!(
            path(pb, &[1, 1]).and_then(|v| v.text()).as_deref(),
            Some("m1.example.com")
        );
        assert_eq!(path(pb, &[1, 2]), Some(Value::Varint(16000)));
        assert_eq!(path(pb, &[1, 3]), Some(Value::Varint(1_700_000_000_123)));
        let hdfs = hdfs_active("ns1", "nn2", "nn2.example.com");
        assert_eq!(
            field(&hdfs, 2).and_then(|v| v.text()).as_deref(),
            Some("nn2")
        );
        assert_eq!(field(&hdfs, 9), None);
        assert_eq!(strip_hbase_prefix(b"plain"), b"plain");
    }

    #[test]
    fn binary_bytes_are_no_text() {
        assert_eq!(Value::Bytes(&[0xff, 0x00]).text(), None);
        assert_eq!(Value::Bytes(b"a\0b").text(), None);
    }

    proptest! {
        /// Any bytes: no panic, and whatever is read lies inside them.
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..200), a in 0u64..8, b in 0u64..8) {
            let _ = path(&data, &[a, b]);
            let _ = strip_hbase_prefix(&data);
        }
    }
}
