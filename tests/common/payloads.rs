//! Znode payloads byte for byte as each system's current release writes
//! them, for the layout tests of systems the harness cannot run here
//! (Kafka, HBase, HDFS: none is packaged by Debian or PyPI).
//! docs/configuration.md cites the release and source of each format.

/// Kafka 3.9 (the last line with ZooKeeper mode), `ControllerZNode.encode`
/// in core's `kafka/zk/ZkData.scala`: a Scala `Map` of four entries, which
/// keeps its order; `kraftControllerEpoch` is -1 outside a KRaft migration.
pub fn kafka_controller(broker: u32, timestamp_ms: u64) -> Vec<u8> {
    format!(
        r#"{{"version":2,"brokerid":{broker},"timestamp":"{timestamp_ms}","kraftControllerEpoch":-1}}"#
    )
    .into_bytes()
}

/// Kafka 3.9 `ControllerEpochZNode.encode`: the epoch as decimal text.
pub fn kafka_controller_epoch(epoch: u32) -> Vec<u8> {
    epoch.to_string().into_bytes()
}

/// Kafka 3.9 `BrokerIdZNode.encode`, registration version 5, one
/// PLAINTEXT listener: a mutable `HashMap`, whose key order is the one
/// real brokers show (`get /brokers/ids/0`).
pub fn kafka_broker(host: &str, port: u16, timestamp_ms: u64) -> Vec<u8> {
    format!(
        r#"{{"listener_security_protocol_map":{{"PLAINTEXT":"PLAINTEXT"}},"endpoints":["PLAINTEXT://{host}:{port}"],"jmx_port":-1,"features":{{}},"host":"{host}","timestamp":"{timestamp_ms}","port":{port},"version":5}}"#
    )
    .into_bytes()
}

/// HBase 2.6's prefix of every znode it writes through
/// `RecoverableZooKeeper` (`ZKMetadata.appendMetaData`): `0xFF`, a
/// big-endian int32 length, the process identifier (`master:16000`,
/// `regionserver:16020`) and an 8-byte random salt; then `PBUF`
/// (`ProtobufUtil.prependPBMagic`).
fn hbase_prefix(identifier: &str, salt: [u8; 8]) -> Vec<u8> {
    let mut out = vec![0xFF];
    let len = u32::try_from(identifier.len() + salt.len()).unwrap();
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(identifier.as_bytes());
    out.extend_from_slice(&salt);
    out.extend_from_slice(b"PBUF");
    out
}

/// HBase 2.6 `/hbase/master` (and `backup-masters/<server name>`, the
/// same bytes for the backup): `MasterAddressTracker.toByteArray`, a
/// `ZooKeeperProtos.Master { master: ServerName { host_name = 1, port =
/// 2, start_code = 3 } = 1, rpc_version = 2 (0), info_port = 3 }`.
pub fn hbase_master(host: &str, port: u16, start_code: u64, info_port: u16) -> Vec<u8> {
    let mut server = Vec::new();
    pb_bytes(&mut server, 1, host.as_bytes());
    pb_varint(&mut server, 2, u64::from(port));
    pb_varint(&mut server, 3, start_code);
    let mut master = hbase_prefix(
        &format!("master:{port}"),
        *b"\x5a\x17\xc0\xff\xee\x01\x02\x03",
    );
    pb_bytes(&mut master, 1, &server);
    pb_varint(&mut master, 2, 0);
    pb_varint(&mut master, 3, u64::from(info_port));
    master
}

/// HBase 2.6 `/hbase/rs/<host,port,startcode>`: `HRegionServer`'s
/// `RegionServerInfo { info_port = 1, version_info = 2: VersionInfo {
/// version = 1, url = 2, revision = 3, user = 4, date = 5, src_checksum
/// = 6, version_major = 7, version_minor = 8 } }`.
pub fn hbase_region_server(port: u16, info_port: u16) -> Vec<u8> {
    let mut version = Vec::new();
    for (field, text) in [
        (1, "2.6.1"),
        (2, "git://builder/hbase"),
        (3, "7ed50b4dd742269a78875fb32112215f831284ff"),
        (4, "hbase"),
        (5, "Mon Oct  7 12:00:00 UTC 2024"),
        (6, "0b6e2aa1a4a1c8e4f8d6b0a7d3e1c9f5"),
    ] {
        pb_bytes(&mut version, field, text.as_bytes());
    }
    pb_varint(&mut version, 7, 2);
    pb_varint(&mut version, 8, 6);
    let mut rs = hbase_prefix(
        &format!("regionserver:{port}"),
        *b"\x01\x23\x45\x67\x89\xab\xcd\xef",
    );
    pb_varint(&mut rs, 1, u64::from(info_port));
    pb_bytes(&mut rs, 2, &version);
    rs
}

/// Hadoop 3.4 ZKFC's lock and breadcrumb data:
/// `DFSZKFailoverController.targetToData`, an `HAZKInfoProtos.ActiveNodeInfo
/// { nameserviceId = 1, namenodeId = 2, hostname = 3, port = 4, zkfcPort =
/// 5 }` written by `ActiveStandbyElector` as is (no prefix).
pub fn hdfs_active(nameservice: &str, namenode: &str, host: &str, port: u16, zkfc: u16) -> Vec<u8> {
    let mut out = Vec::new();
    pb_bytes(&mut out, 1, nameservice.as_bytes());
    pb_bytes(&mut out, 2, namenode.as_bytes());
    pb_bytes(&mut out, 3, host.as_bytes());
    pb_varint(&mut out, 4, u64::from(port));
    pb_varint(&mut out, 5, u64::from(zkfc));
    out
}

/// Protobuf wire format: a varint field (wire type 0).
fn pb_varint(out: &mut Vec<u8>, field: u32, value: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, value);
}

/// Protobuf wire format: a length-delimited field (wire type 2).
fn pb_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Hex of `bytes`, to compare with the literal bytes a test states.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
