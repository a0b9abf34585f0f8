use super::sessions::parse_java_date;
use super::*;
use proptest::prelude::*;

fn fixture(path: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("fixture {path}: {e}"))
}

#[test]
fn mntr_from_a_real_leader() {
    let m = parse_mntr(&fixture("3.8.0/leader/mntr.txt")).unwrap();
    assert_eq!(m.role(), Some(Role::Leader));
    assert_eq!(m.version(), Some("3.8.0-${mvngit.commit.id}"));
    assert!(m.numbers().any(|(k, _)| k == "zk_synced_followers"));
    assert!(m.values().len() > 400);
    assert_eq!(m.skipped, 0);
    assert_eq!(
        m.strings.get("zk_peer_state").map(String::as_str),
        Some("leading - broadcast")
    );
}

#[test]
fn mntr_skips_what_it_cannot_name() {
    let m = parse_mntr(
        "zk_ok\t1\nzk_lab{x=\"y\"}\t2\nzk.dotted\t3\nno tab here\nzk_nan\tNaN\nzk_f\t1.5e3\n",
    )
    .unwrap();
    assert_eq!(
        m.numbers().collect::<Vec<_>>(),
        vec![("zk_ok", 1.0), ("zk_f", 1500.0)]
    );
    assert_eq!(m.keys(), "zk_ok\nzk_f");
    assert_eq!(m.skipped, 4);
    assert!(parse_mntr("").is_err());
    assert!(parse_mntr("garbage").is_err());
}

#[test]
fn srvr_of_each_role() {
    let leader = parse_srvr(&fixture("3.8.0/leader/srvr.txt")).unwrap();
    assert_eq!(leader.role, Some(Role::Leader));
    assert!(leader.zxid_epoch().unwrap() >= 1);
    let follower = parse_srvr(&fixture("3.8.0/follower/srvr.txt")).unwrap();
    assert_eq!(follower.role, Some(Role::Follower));
    let standalone = parse_srvr(&fixture("3.8.0/standalone/srvr.txt")).unwrap();
    assert_eq!(standalone.role, Some(Role::Standalone));
    assert!(standalone.node_count.unwrap() >= 5);
    let stat = parse_srvr(&fixture("3.8.0/standalone/stat.txt")).unwrap();
    assert_eq!(stat.role, Some(Role::Standalone));
    let s = parse_srvr("Zxid: 0x1fffffffe\nMode: follower\n").unwrap();
    assert_eq!(
        (s.zxid_epoch(), s.zxid_counter()),
        (Some(1), Some(0xffff_fffe))
    );
    assert!(parse_srvr("hello").is_err());
}

#[test]
fn refusals_are_recognised() {
    assert_eq!(
        refusal(&fixture("3.8.0/default-whitelist/mntr.txt")),
        Some(Refusal::NotAllowed)
    );
    assert_eq!(
        refusal(&fixture("3.8.0/not-serving/mntr.txt")),
        Some(Refusal::NotServing)
    );
    assert_eq!(
        refusal(&fixture("3.8.0/not-serving/srvr.txt")),
        Some(Refusal::NotServing)
    );
    assert_eq!(refusal(&fixture("3.8.0/leader/mntr.txt")), None);
    assert_eq!(
        refusal(&fixture("3.8.0/default-whitelist/srvr.txt")),
        None,
        "srvr is whitelisted by default"
    );
}

#[test]
fn small_commands() {
    assert!(parse_ruok(&fixture("3.8.0/standalone/ruok.txt")));
    assert!(!parse_ruok(
        "ruok is not executed because it is not in the whitelist."
    ));
    assert_eq!(
        parse_isro(&fixture("3.8.0/standalone/isro.txt")),
        Ok(Some(false))
    );
    assert_eq!(parse_isro("ro"), Ok(Some(true)));
    assert_eq!(parse_isro(&fixture("3.8.0/not-serving/isro.txt")), Ok(None));
    assert!(parse_isro("what").is_err());
    let w = parse_wchs(&fixture("3.8.0/leader/wchs.txt")).unwrap();
    assert!(w.watches >= w.paths);
    let envi = parse_envi(&fixture("3.8.0/standalone/envi.txt")).unwrap();
    assert_eq!(
        envi.get("java.version").map(String::as_str),
        Some("17.0.15")
    );
}

#[test]
fn conf_and_membership() {
    let c = parse_conf(&fixture("3.8.0/leader/conf.txt")).unwrap();
    assert_eq!(c.tick_time_ms(), Some(200.0));
    assert_eq!(c.min_session_timeout_ms(), Some(400.0));
    assert!(c.server_id().is_some());
    assert_eq!(c.members.len(), 3, "{c:?}");
    let standalone = parse_conf(&fixture("3.8.0/standalone/conf.txt")).unwrap();
    assert!(standalone.members.is_empty());
    let members = parse_members(
        "server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181\nserver.2=zk2:2888:3888:observer;zk2c:2182\nserver.3=zk3:2888:3888\nversion=100000000\n",
    );
    assert_eq!(members[0].client_address.as_deref(), Some("10.0.0.1:2181"));
    assert_eq!(members[1].client_address.as_deref(), Some("zk2c:2182"));
    assert_eq!(members[1].role, "observer");
    assert_eq!(members[2].client_address, None);
}

#[test]
fn dump_sessions_and_where_reading_stops() {
    let raw = fixture("3.8.0/standalone/dump-with-sessions.txt");
    let d = parse_dump(&raw).unwrap();
    let ids: Vec<i64> = d.sessions.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        [
            0x100002034780000,
            0x100003c2c100002,
            0x100003c2c100003,
            0x100003c2c100001,
            0x100003c2c100000
        ],
        "the session section only: no connection's session id"
    );
    assert!(
        d.sessions.iter().all(|(_, t)| t.is_some()),
        "UTC dates parse"
    );
    // Fed line by line, the reader has what it needs at the ephemeral
    // section: the lines after it are never read.
    let mut reader = DumpReader::default();
    let fed = raw.lines().take_while(|l| reader.line(l)).count();
    assert_eq!(raw.lines().nth(fed), Some("ephemeral nodes dump:"));
    assert_eq!(reader.finish().unwrap(), d);
    // A reply cut inside the session section keeps what arrived.
    let mut reader = DumpReader::default();
    raw.lines().take(5).for_each(|l| assert!(reader.line(l)));
    assert_eq!(reader.finish().unwrap().sessions.len(), 1);
    assert_eq!(
        parse_java_date("Mon Nov 30 09:30:13 UTC 2026"),
        Some(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_031_013))
    );
    assert_eq!(parse_java_date("Mon Nov 30 09:30:13 CET 2026"), None);
    assert!(parse_dump("dump is not executed because it is not in the whitelist.").is_err());
}

#[test]
fn wchp_paths_and_sessions() {
    let w = parse_wchp("/fx\n\t0x100003c2c100005\n/wechat/bots\n\t0x1\n\t0x2\n").unwrap();
    assert_eq!(w.get("/fx"), Some(&vec![0x100003c2c100005]));
    assert_eq!(w.get("/wechat/bots").map(Vec::len), Some(2));
    assert!(parse_wchp("").unwrap().is_empty());
    assert!(parse_wchp("wchp is not executed because it is not in the whitelist.").is_err());
}

#[test]
fn cons_lines() {
    let c = parse_cons(
        " /127.0.0.1:50496[1](queued=0,recved=12,sent=12,sid=0x1000001e8900019,lop=PING,est=1,to=4000,lcxid=0x3,lzxid=0x53,lresp=1,llat=0,minlat=0,avglat=0,maxlat=2)\n /127.0.0.1:50500[0](queued=0,recved=1,sent=0)\n\n",
    );
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].session, Some(0x1000001e8900019));
    assert_eq!((c[0].received, c[0].timeout_ms), (Some(12), Some(4000)));
    assert_eq!(c[1].session, None);
    assert_eq!(
        (c[0].address.as_str(), c[0].host()),
        ("127.0.0.1:50496", "127.0.0.1")
    );
    let v6 = parse_cons(
        " /0:0:0:0:0:0:0:1:41234[1](queued=0,recved=3,sent=3,sid=0x1)\n /[::1]:41235[1](queued=0,recved=3,sent=3,sid=0x2)\n /[fe80::1%lo]:7[0](queued=0)\n",
    );
    let addresses: Vec<(&str, &str)> = v6.iter().map(|c| (c.address.as_str(), c.host())).collect();
    assert_eq!(
        addresses,
        [
            ("0:0:0:0:0:0:0:1:41234", "0:0:0:0:0:0:0:1"),
            ("[::1]:41235", "::1"),
            ("[fe80::1%lo]:7", "fe80::1%lo")
        ]
    );
    assert_eq!(v6[1].session, Some(2));
    assert!(!parse_cons(&fixture("3.8.0/leader/cons.txt")).is_empty());
}

/// `mntr` as it was parsed before its single-pass scan: the reference
/// the scan must agree with.
fn parse_mntr_by_lines(reply: &str) -> Result<Mntr, ParseError> {
    let mut mntr = Mntr::default();
    for line in reply.lines().filter(|l| !l.trim().is_empty()) {
        let Some((key, value)) = line.split_once('\t') else {
            mntr.skipped += 1;
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if !is_metric_key(key) {
            mntr.skipped += 1;
            continue;
        }
        match value.parse::<f64>() {
            Ok(v) if v.is_finite() => mntr.push(key, v),
            Ok(_) => mntr.skipped += 1,
            Err(_) => {
                mntr.strings.insert(key.to_owned(), value.to_owned());
            }
        }
    }
    if mntr.values().is_empty() && mntr.strings.is_empty() {
        return Err(ParseError(
            "no `key<TAB>value` line in the mntr reply".into(),
        ));
    }
    Ok(mntr)
}

proptest! {
    /// The single-pass scan reads any reply as the line-by-line parse did:
    /// the same keys, values (bit for bit), strings and skipped lines, or
    /// the same error.
    #[test]
    fn mntr_is_read_as_line_by_line(
        lines in proptest::collection::vec(
            prop_oneof![
                ("[a-z_]{1,12}", "[0-9]{1,6}").prop_map(|(k, v)| format!("zk_{k}\t{v}")),
                ("[a-z_]{1,12}", any::<f64>()).prop_map(|(k, v)| format!("zk_{k}\t{v}")),
                ("[a-z_]{1,12}", "[ -~]{0,12}").prop_map(|(k, v)| format!("zk_{k}\t{v}")),
                "[ \t\r\u{a0}\u{3000}a-z0-9_.-]{0,20}",
                ".{0,20}",
            ],
            0..30,
        ),
        endings in proptest::collection::vec(prop_oneof![Just("\n"), Just("\r\n"), Just("\r")], 30),
        last in any::<bool>(),
    ) {
        let mut reply = String::new();
        for (i, line) in lines.iter().enumerate() {
            reply.push_str(line);
            if i + 1 < lines.len() || last {
                reply.push_str(endings[i]);
            }
        }
        let (scan, by_lines) = (parse_mntr(&reply), parse_mntr_by_lines(&reply));
        match (&scan, &by_lines) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(a.keys(), b.keys());
                let bits = |m: &Mntr| m.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                prop_assert_eq!(bits(a), bits(b));
                prop_assert_eq!(&a.strings, &b.strings);
                prop_assert_eq!(a.skipped, b.skipped);
            }
            _ => prop_assert_eq!(scan, by_lines),
        }
    }

    /// Whatever the whole-number path reads, the float parser reads the
    /// same (bit for bit, so `-0` too); what it leaves, the parser gets.
    #[test]
    fn whole_numbers_are_read_as_the_float_parser_reads_them(
        text in prop_oneof![
            "-?[0-9]{1,18}",
            any::<i64>().prop_map(|i| i.to_string()),
            Just("-0".to_owned()),
            Just("-".to_owned()),
            Just(String::new()),
            "[-+0-9.eE]{0,8}",
            ".{0,8}",
        ],
    ) {
        if let Some(v) = super::whole_number(&text) {
            prop_assert_eq!(Some(v.to_bits()), text.parse::<f64>().ok().map(f64::to_bits), "{}", text);
        }
        let mntr = parse_mntr(&format!("zk_x\t{text}\n"));
        let read = mntr.ok().and_then(|m| m.values().first().copied());
        let want = text.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        prop_assert_eq!(read.map(f64::to_bits), want.map(f64::to_bits), "{}", text);
    }

    #[test]
    fn parsers_never_panic(reply in ".{0,400}") {
        let _ = refusal(&reply);
        let _ = parse_mntr(&reply);
        let _ = parse_srvr(&reply);
        let _ = parse_ruok(&reply);
        let _ = parse_isro(&reply);
        let _ = parse_conf(&reply);
        let _ = parse_cons(&reply);
        let _ = parse_wchs(&reply);
        let _ = parse_envi(&reply);
        let _ = parse_dump(&reply);
        let _ = parse_wchp(&reply);
        let _ = parse_java_date(&reply);
    }

    /// Every session of the session section, in order, with its set's
    /// expiry; whatever the ephemeral and connection sections hold (paths,
    /// session ids, lines like the session section's) changes nothing.
    #[test]
    fn dump_sessions_are_the_session_sections_whatever_follows(
        sets in proptest::collection::vec(
            (0u32..60, proptest::collection::vec(1i64..i64::MAX, 0..4)),
            0..6,
        ),
        after in proptest::collection::vec(
            prop_oneof![
                Just("0x1234:".to_owned()),
                Just("\t0x99".to_owned()),
                Just("1 expire at Mon Nov 30 09:30:21 UTC 2026:".to_owned()),
                "\t/[a-z/_0-9]{1,20}",
                ".{0,30}",
            ],
            0..20,
        ),
    ) {
        let mut reply = format!("SessionTracker dump:\nSession Sets ({})/(5):\n", sets.len());
        let mut want = Vec::new();
        for (second, ids) in &sets {
            reply += &format!("{} expire at Mon Nov 30 09:30:{second:02} UTC 2026:\n", ids.len());
            let at = parse_java_date(&format!("Mon Nov 30 09:30:{second:02} UTC 2026"));
            for id in ids {
                reply += &format!("\t0x{id:x}\n");
                want.push((*id, at));
            }
        }
        reply += "ephemeral nodes dump:\n";
        for line in &after {
            reply += line;
            reply.push('\n');
        }
        prop_assert_eq!(parse_dump(&reply).unwrap().sessions, want);
    }
}
