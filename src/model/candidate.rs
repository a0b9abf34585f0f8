//! What a single election child is: a [`Candidate`], its sequence number
//! and its identity.
//!
//! ZooKeeper appends `%010d` of a signed 32-bit counter to EPHEMERAL_SEQUENTIAL
//! and PERSISTENT_SEQUENTIAL nodes. Recipes put arbitrary prefixes in front
//! (`<uuid>__lock__`, `_c_<guid>-latch-`, `instance_`), so the only reliable
//! order is the number parsed from the last ten characters.

use std::time::SystemTime;

use regex::Regex;

use crate::protobuf;
use crate::systems::{self, Decoder};

/// A candidate as the election needs it, with its identity already extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    pub sequence: i32,
    pub identity: String,
    /// Session owning the node (`ephemeralOwner`); 0 for a persistent node.
    pub owner: i64,
    /// Creation time of the node, from its stat.
    pub ctime: SystemTime,
}

/// Longest identity we keep; longer ones are cut (label values must stay small).
pub const MAX_IDENTITY_CHARS: usize = 128;

/// Bytes of node data looked at for `data` and `regex:` identities. Identity
/// comes from the start of the data; reading a 1 MiB payload as text would only
/// cost memory and time.
const IDENTITY_SCAN_BYTES: usize = 4096;

/// Parses the ZooKeeper sequence suffix of a node name.
///
/// Returns `None` when the name is shorter than ten characters or its last ten
/// characters are not a `%010d` rendering of an `i32` (such as `-000000001`
/// after the counter wrapped).
///
/// Java renders `n <= -10^9` as eleven characters (`-1000000000`); such a
/// suffix is read from its last ten as positive, because `name-1000000000`
/// (a separator followed by a large positive counter) cannot be told apart
/// and is the likelier of the two.
pub fn parse_sequence(name: &str) -> Option<i32> {
    let bytes = name.as_bytes();
    if bytes.len() < 10 {
        return None;
    }
    let suffix = &bytes[bytes.len() - 10..];
    let (negative, digits) = match suffix[0] {
        b'-' => (true, &suffix[1..]),
        _ => (false, suffix),
    };
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits
        .iter()
        .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
    let value = if negative { -magnitude } else { magnitude };
    i32::try_from(value).ok()
}

/// The sequence number of `name` only when its suffix is exactly what
/// ZooKeeper writes for a sequential node (`%010d`): a run of exactly ten
/// digits, or a minus and nine digits (a negative number after the 32-bit
/// counter wrapped; `i32::MIN` is a minus and ten). Stricter than
/// [`parse_sequence`], for telling sequential nodes from names that merely
/// end in digits: a 13-digit HBase startcode ends in ten digits too, but its
/// digit run is thirteen long. A minus before ten digits is read as a
/// separator (Curator's `-lock-0000000001`) unless only a negative number
/// fits.
pub fn exact_sequence(name: &str) -> Option<i32> {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let tail = &name[name.len() - digits..];
    let signed = name[..name.len() - digits].ends_with('-');
    match digits {
        10 => tail.parse::<i32>().ok().or_else(|| {
            signed
                .then(|| name[name.len() - 11..].parse::<i32>().ok())
                .flatten()
        }),
        9 if signed => name[name.len() - 10..].parse::<i32>().ok(),
        _ => None,
    }
}

/// How the identity of a candidate (the device, host or instance it stands for)
/// is read from its node.
#[derive(Debug, Clone)]
pub enum IdentityMode {
    /// The node data as text.
    Data,
    /// The node name itself.
    Node,
    /// A JSON pointer (RFC 6901) into the node data parsed as JSON.
    JsonPointer(String),
    /// The first capture group of a regex applied to the node data as text.
    Regex(Regex),
    /// A protobuf field, by field numbers from the outermost message
    /// (`protobuf:1.1`), after HBase's `0xFF…PBUF` prefix when present.
    Protobuf(Vec<u64>),
    /// A known system's own payload (`hbase`, `hdfs`, `flink`: see
    /// [`systems`]), decoded by the system's file.
    Decoded(&'static Decoder),
    /// The client address of the session owning the node, as `cons` lists
    /// it, for recipes whose nodes carry no data (Spark's and Flink's
    /// leader latches): not in the node at all, so [`extract`](Self::extract)
    /// cannot give it; the election tree names its candidates from the
    /// ghost check's rounds, and leaves them unnamed (empty) until a round
    /// lists their session.
    Owner(OwnerPart),
    /// The election's record, for the candidate whose session owns the
    /// record's node (Flink's leader information, written by the leader
    /// beside its latch): read with the record's own mode, by the
    /// election tree; the other candidates stay unnamed.
    OwnerRecord,
}

/// What of the owner session's client address names a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerPart {
    /// The host (`owner-host`): stable while the process lives.
    Host,
    /// Host and port (`owner-address`): tells processes on one host apart,
    /// but changes whenever the client reconnects.
    Address,
}

impl OwnerPart {
    /// This part of `address` (`host:port` as `cons` prints it).
    pub fn of(self, address: &str) -> &str {
        match self {
            OwnerPart::Host => crate::fourlw::parse::host_of(address),
            OwnerPart::Address => address,
        }
    }
}

impl IdentityMode {
    /// The mode as the configuration spells it: what [`parse`](Self::parse)
    /// reads back to the same mode.
    pub fn spec(&self) -> String {
        match self {
            Self::Data => "data".into(),
            Self::Node => "node".into(),
            Self::JsonPointer(pointer) => format!("json:{pointer}"),
            Self::Regex(regex) => format!("regex:{}", regex.as_str()),
            Self::Protobuf(path) => {
                let fields: Vec<String> = path.iter().map(u64::to_string).collect();
                format!("protobuf:{}", fields.join("."))
            }
            Self::Decoded(decoder) => decoder.name.into(),
            Self::Owner(OwnerPart::Host) => "owner-host".into(),
            Self::Owner(OwnerPart::Address) => "owner-address".into(),
            Self::OwnerRecord => "owner-record".into(),
        }
    }

    /// Whether candidates are named by their owner session (`owner-*`)
    /// rather than from their node.
    pub fn named_by_owner(&self) -> bool {
        matches!(self, Self::Owner(_) | Self::OwnerRecord)
    }

    /// The part of the owner session's address this mode names a
    /// candidate by, if it is an `owner-*` mode.
    pub fn owner_part(&self) -> Option<OwnerPart> {
        match self {
            Self::Owner(part) => Some(*part),
            _ => None,
        }
    }

    /// Parses `data`, `node`, `json:/pointer`, `regex:PATTERN`,
    /// `protobuf:N[.N…]`, a known system's mode (`hbase`, …), `owner-host`,
    /// `owner-address` or `owner-record`.
    pub fn parse(spec: &str) -> Result<Self, String> {
        match spec {
            "owner-host" => return Ok(Self::Owner(OwnerPart::Host)),
            "owner-address" => return Ok(Self::Owner(OwnerPart::Address)),
            "owner-record" => return Ok(Self::OwnerRecord),
            "data" => return Ok(Self::Data),
            "node" => return Ok(Self::Node),
            _ => {}
        }
        if let Some(decoder) = systems::decoder(spec) {
            return Ok(Self::Decoded(decoder));
        }
        if let Some(fields) = spec.strip_prefix("protobuf:") {
            let path: Result<Vec<u64>, _> = fields.split('.').map(str::parse::<u64>).collect();
            return match path {
                Ok(p) if !p.is_empty() && p.iter().all(|n| *n > 0) => Ok(Self::Protobuf(p)),
                _ => Err(format!(
                    "`{fields}` is not a protobuf field path; write field numbers such as `protobuf:1.1`"
                )),
            };
        }
        if let Some(pointer) = spec.strip_prefix("json:") {
            if !(pointer.is_empty() || pointer.starts_with('/')) {
                return Err(format!(
                    "JSON pointer `{pointer}` must be empty or start with `/` (e.g. `json:/device/id`)"
                ));
            }
            return Ok(Self::JsonPointer(pointer.to_owned()));
        }
        if let Some(pattern) = spec.strip_prefix("regex:") {
            let regex = Regex::new(pattern).map_err(|e| {
                format!(
                    "invalid regex `{pattern}`: {}",
                    e.to_string().replace('\n', " ")
                )
            })?;
            if regex.captures_len() < 2 {
                return Err(format!(
                    "regex `{pattern}` has no capture group; the first group is the identity"
                ));
            }
            return Ok(Self::Regex(regex));
        }
        let decoders: String = systems::decoders()
            .map(|d| format!("\"{}\", ", d.name))
            .collect();
        Err(format!(
            "`{spec}` is not an identity mode; use \"data\", \"node\", \"json:/pointer\", \"regex:PATTERN\", \"protobuf:1.2\", {decoders}\"owner-host\", \"owner-address\" or \"owner-record\""
        ))
    }

    /// Extracts the identity of the node `name` holding `data`.
    ///
    /// Never fails: the result is trimmed and cut to [`MAX_IDENTITY_CHARS`],
    /// control characters become U+FFFD, and binary data (not UTF-8, or
    /// holding NUL), anything empty or unmatched falls back to the node name,
    /// so a candidate always has an identity and no label carries binary.
    pub fn extract(&self, name: &str, data: &[u8]) -> String {
        let raw = match self {
            // Not in the node: named by the election tree (see the variant).
            Self::Node | Self::Owner(_) | Self::OwnerRecord => None,
            Self::Decoded(decoder) => (decoder.decode)(data),
            Self::Data => text_prefix(data),
            Self::Protobuf(path) => {
                protobuf::path(protobuf::strip_hbase_prefix(data), path).and_then(|v| v.text())
            }
            Self::Regex(regex) => {
                let text = lossy_prefix(data);
                regex
                    .captures(&text)
                    .and_then(|c| c.get(1))
                    .map(|m| m.as_str().to_owned())
            }
            Self::JsonPointer(pointer) => serde_json::from_slice::<serde_json::Value>(data)
                .ok()
                .and_then(|v| v.pointer(pointer).cloned())
                .map(|v| match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                }),
        };
        let cleaned = raw.as_deref().map(clean_identity).unwrap_or_default();
        if cleaned.is_empty() {
            clean_identity(name)
        } else {
            cleaned
        }
    }
}

fn lossy_prefix(data: &[u8]) -> String {
    String::from_utf8_lossy(&data[..data.len().min(IDENTITY_SCAN_BYTES)]).into_owned()
}

/// The scanned prefix of `data` when it is text: valid UTF-8 (a character
/// cut by the scan limit aside) without NUL; `None` for binary.
fn text_prefix(data: &[u8]) -> Option<String> {
    let prefix = &data[..data.len().min(IDENTITY_SCAN_BYTES)];
    let text = match std::str::from_utf8(prefix) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&prefix[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    (!text.contains('\0')).then(|| text.to_owned())
}

/// Trims, replaces control characters (NUL, newline, escape sequences: they
/// break legends and terminals downstream) with U+FFFD, and cuts to
/// [`MAX_IDENTITY_CHARS`] characters. Also what the lease source makes of
/// a holder, so that the two compare as equals.
pub fn clean_identity(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .take(MAX_IDENTITY_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sequences_parse_from_the_last_ten_characters() {
        assert_eq!(parse_sequence("instance_0000000007"), Some(7));
        assert_eq!(parse_sequence("7c2e1f3a-1b2c__lock__0000000003"), Some(3));
        assert_eq!(parse_sequence("_c_abc-latch-0000000012"), Some(12));
        assert_eq!(parse_sequence("0000000000"), Some(0));
        assert_eq!(parse_sequence("n_2147483647"), Some(i32::MAX));
        assert_eq!(parse_sequence("n_-000000001"), Some(-1));
        assert_eq!(
            parse_sequence("n_-2147483648"),
            None,
            "last ten are 2147483648"
        );
        assert_eq!(parse_sequence("n-2147483648"), None, "11 chars of number");
        assert_eq!(parse_sequence("n_4294967295"), None, "beyond i32");
        assert_eq!(parse_sequence("config"), None);
        assert_eq!(parse_sequence("lock-00000001"), None);
        assert_eq!(parse_sequence("abc_000000000x"), None);
        assert_eq!(parse_sequence("é_0000000001"), Some(1));
        assert_eq!(parse_sequence("éééééééééé"), None);
    }

    #[test]
    fn exact_sequences_are_what_zookeeper_writes() {
        assert_eq!(exact_sequence("instance_0000000007"), Some(7));
        assert_eq!(exact_sequence("0000000000"), Some(0));
        assert_eq!(exact_sequence("n_-000000005"), Some(-5));
        assert_eq!(exact_sequence("n_-2147483648"), Some(i32::MIN));
        assert_eq!(
            exact_sequence("rs1.example.com,16020,1700000000123"),
            None,
            "a 13-digit startcode"
        );
        assert_eq!(exact_sequence("host,16020,000000123"), None, "nine digits");
        assert_eq!(
            exact_sequence("_c_5b3c-lock-0000000001"),
            Some(1),
            "a minus before ten digits separates"
        );
        assert_eq!(exact_sequence("n_4294967295"), None, "beyond i32");
        assert_eq!(exact_sequence("config"), None);
        assert_eq!(exact_sequence(""), None);
    }

    proptest! {
        /// Every number ZooKeeper can write as a suffix is recognised, and
        /// reads back exactly except from -1000000000 down, whose text is
        /// also a positive number after a `-` separator.
        #[test]
        fn exact_sequence_reads_every_suffix_zookeeper_writes(prefix in "[a-z_]{0,8}", n in any::<i32>()) {
            let read = exact_sequence(&format!("{prefix}{n:010}"));
            if n > -1_000_000_000 || n == i32::MIN {
                prop_assert_eq!(read, Some(n));
            } else {
                prop_assert_eq!(read, Some(-n));
            }
        }
    }

    #[test]
    fn identity_modes() {
        let data = br#"{"device":{"id":"phone-7"},"n":3}"#;
        let json = IdentityMode::parse("json:/device/id").unwrap();
        assert_eq!(json.extract("c_0000000001", data), "phone-7");
        let n = IdentityMode::parse("json:/n").unwrap();
        assert_eq!(n.extract("c_0000000001", data), "3");
        assert_eq!(json.extract("c_0000000001", b"not json"), "c_0000000001");

        let re = IdentityMode::parse("regex:host=(\\S+)").unwrap();
        assert_eq!(re.extract("c", b"pid=1 host=web-3 x"), "web-3");
        assert_eq!(re.extract("c", b"nothing"), "c");

        let data_mode = IdentityMode::parse("data").unwrap();
        assert_eq!(data_mode.extract("c", b"  dev-1 \n"), "dev-1");
        assert_eq!(data_mode.extract("c_1", b"   "), "c_1");
        assert_eq!(
            data_mode.extract("c", &[0xff, b'a']),
            "c",
            "binary: the node name"
        );
        assert_eq!(data_mode.extract("c", b"a\nb\0c"), "c", "NUL: binary");
        assert_eq!(
            data_mode.extract("c", b"a\nb\tc\x1b"),
            "a\u{fffd}b\u{fffd}c\u{fffd}"
        );
        let hbase = crate::protobuf::tests::hbase_master("m1.example.com", 16000, 17);
        assert_eq!(
            IdentityMode::parse("hbase")
                .unwrap()
                .extract("master", &hbase),
            "m1.example.com:16000"
        );
        assert_eq!(
            data_mode.extract("master", &hbase),
            "master",
            "never binary in a label"
        );
        assert_eq!(
            IdentityMode::parse("protobuf:1.3")
                .unwrap()
                .extract("master", &hbase),
            "17"
        );
        let hdfs = crate::protobuf::tests::hdfs_active("ns1", "nn2", "nn2.example.com");
        assert_eq!(
            IdentityMode::parse("hdfs").unwrap().extract("lock", &hdfs),
            "nn2"
        );
        assert_eq!(
            IdentityMode::parse("protobuf:3")
                .unwrap()
                .extract("lock", &hdfs),
            "nn2.example.com"
        );
        assert_eq!(
            IdentityMode::parse("hdfs")
                .unwrap()
                .extract("lock", b"junk"),
            "lock"
        );
        assert_eq!(
            IdentityMode::parse("node").unwrap().extract("c_1", b"x"),
            "c_1"
        );
    }

    #[test]
    fn identity_mode_errors_say_what_to_write() {
        assert!(
            IdentityMode::parse("regex:(")
                .unwrap_err()
                .contains("invalid regex")
        );
        assert!(
            IdentityMode::parse("regex:abc")
                .unwrap_err()
                .contains("capture group")
        );
        assert!(
            IdentityMode::parse("json:a")
                .unwrap_err()
                .contains("start with")
        );
        assert!(
            IdentityMode::parse("name")
                .unwrap_err()
                .contains("not an identity mode")
        );
        for bad in ["protobuf:", "protobuf:a", "protobuf:0", "protobuf:1..2"] {
            assert!(
                IdentityMode::parse(bad)
                    .unwrap_err()
                    .contains("not a protobuf field path"),
                "{bad}"
            );
        }
    }

    #[test]
    fn huge_binary_data_is_cut() {
        let big = vec![b'x'; 1 << 20];
        let id = IdentityMode::Data.extract("c", &big);
        assert_eq!(id.chars().count(), MAX_IDENTITY_CHARS);
        let binary: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        let id = IdentityMode::Data.extract("c", &binary);
        assert!(id.chars().count() <= MAX_IDENTITY_CHARS);
    }

    proptest! {
        #[test]
        fn formatted_sequences_round_trip(prefix in "[a-z_\\-]{0,12}", n in any::<i32>()) {
            let name = format!("{prefix}{n:010}");
            // %010d of n <= -10^9 is 11 characters (`-1000000000`): its last ten
            // read as a positive number; see parse_sequence.
            prop_assume!(n > -1_000_000_000);
            prop_assert_eq!(parse_sequence(&name), Some(n));
        }

        #[test]
        fn identity_never_panics_and_is_bounded(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            for mode in ["data", "node", "json:/a", "regex:(.)"] {
                let id = IdentityMode::parse(mode).unwrap().extract("c_0000000001", &data);
                prop_assert!(!id.is_empty());
                prop_assert!(id.chars().count() <= MAX_IDENTITY_CHARS);
            }
        }
    }

    #[test]
    fn flinks_leader_information_names_its_address() {
        let flink = IdentityMode::parse("flink").unwrap();
        // As Flink 2.3 wrote it: writeUTF(address), writeObject(UUID).
        let mut data = vec![0xAC, 0xED, 0x00, 0x05, 0x77, 0x17, 0x00, 0x15];
        data.extend_from_slice(b"http://127.0.0.1:8181sr\x00\x0ejava.util.UUID");
        assert_eq!(
            flink.extract("connection_info", &data),
            "http://127.0.0.1:8181"
        );
        let mut long = vec![0xAC, 0xED, 0x00, 0x05, 0x7A, 0, 0, 0, 5, 0x00, 0x03];
        long.extend_from_slice(b"abc");
        assert_eq!(flink.extract("n", &long), "abc");
        for bad in [
            &b""[..],
            b"\xAC\xED\x00\x05",
            b"\xAC\xED\x00\x05\x77\x09\x00\x30ab",
            b"plain",
        ] {
            assert_eq!(flink.extract("n", bad), "n", "{bad:?}");
        }
        assert_eq!(
            IdentityMode::parse("owner-record").unwrap().spec(),
            "owner-record"
        );
        assert!(IdentityMode::OwnerRecord.named_by_owner());
        assert!(!flink.named_by_owner());
    }

    /// Every identity mode a known system brings is parsed by its name and
    /// spelled back the same.
    #[test]
    fn every_known_systems_identity_mode_is_parsed_by_its_name() {
        for decoder in crate::systems::decoders() {
            let mode = IdentityMode::parse(decoder.name).unwrap();
            assert_eq!(mode.spec(), decoder.name);
            assert!(!mode.named_by_owner());
        }
        assert_eq!(
            IdentityMode::parse("test-only-hex")
                .unwrap()
                .extract("owner", b"6f6e65"),
            "one"
        );
    }
}
