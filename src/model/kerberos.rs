//! The agent's Kerberos ticket as operators need to see it: whether the
//! last check got a ticket, when it expires, and, when it failed, why in
//! words that say what to do. What GSSAPI reports is classified here
//! ([`classify`]), from the krb5 error codes the library passes through as
//! GSSAPI minor status, so that every message is one line and tested
//! without a KDC.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// When a ticket read at `read_at` with `lifetime` left expires. GSSAPI
/// gives the life in whole seconds, counted by krb5 from the whole second
/// it read the clock at: the expiry is that second plus the life. Adding
/// the life to the precise time instead gave an expiry up to a second
/// late and a different one at every check, which the renewal count took
/// for renewals. Only a build with GSSAPI reads tickets.
#[cfg(any(test, feature = "kerberos"))]
pub fn expiry(read_at: SystemTime, lifetime: Duration) -> SystemTime {
    let whole = read_at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    SystemTime::UNIX_EPOCH + Duration::from_secs(whole) + lifetime
}

/// Expiries this close are one ticket read again (krb5 and the agent may
/// read the clock on either side of a second); a renewal moves the expiry
/// by the time since the ticket was issued, minutes at least.
pub const SAME_TICKET: Duration = Duration::from_secs(2);

/// Why the agent has no usable Kerberos ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The credential cache holds no ticket for the principal.
    NoTicket,
    /// The cache's ticket expired and nobody renewed it.
    TicketExpired,
    /// The KDC refused the keytab's key (stale key version, other realm).
    WrongKeytab,
    /// The keytab has no key for the principal, or cannot be read.
    NoKeyInKeytab,
    /// This host's clock and the KDC's disagree beyond the allowed skew.
    ClockSkew,
    /// The KDC does not know the agent's principal.
    UnknownPrincipal,
    /// The KDC does not know the servers' principal (`zookeeper/host`).
    UnknownService,
    /// No KDC of the realm answered (or none is configured).
    KdcUnreachable,
    /// Anything else GSSAPI says; its own words are kept.
    Other,
}

impl Reason {
    pub const ALL: [Reason; 9] = [
        Self::NoTicket,
        Self::TicketExpired,
        Self::WrongKeytab,
        Self::NoKeyInKeytab,
        Self::ClockSkew,
        Self::UnknownPrincipal,
        Self::UnknownService,
        Self::KdcUnreachable,
        Self::Other,
    ];

    /// The `reason` label of `zookeeper_exporter_kerberos_errors_total`.
    pub fn label(self) -> &'static str {
        match self {
            Self::NoTicket => "no_ticket",
            Self::TicketExpired => "ticket_expired",
            Self::WrongKeytab => "wrong_keytab",
            Self::NoKeyInKeytab => "no_key_in_keytab",
            Self::ClockSkew => "clock_skew",
            Self::UnknownPrincipal => "unknown_principal",
            Self::UnknownService => "unknown_service",
            Self::KdcUnreachable => "kdc_unreachable",
            Self::Other => "other",
        }
    }
}

/// Whether the agent gets its own tickets (a keytab) or reads somebody
/// else's (a credential cache): the same error means different things.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Keytab,
    Cache,
}

/// krb5 error codes (com_err table `krb5`, from `krb5.h`), as GSSAPI's
/// minor status carries them.
mod code {
    pub const C_PRINCIPAL_UNKNOWN: i32 = -1765328378;
    pub const S_PRINCIPAL_UNKNOWN: i32 = -1765328377;
    pub const PREAUTH_FAILED: i32 = -1765328360;
    pub const BAD_INTEGRITY: i32 = -1765328353;
    pub const TKT_EXPIRED: i32 = -1765328352;
    pub const AP_SKEW: i32 = -1765328347;
    pub const CC_NOTFOUND: i32 = -1765328243;
    pub const KDCREP_SKEW: i32 = -1765328236;
    pub const REALM_UNKNOWN: i32 = -1765328230;
    pub const KDC_UNREACH: i32 = -1765328228;
    pub const KT_NOTFOUND: i32 = -1765328203;
    pub const FCC_NOFILE: i32 = -1765328189;
    pub const REALM_CANT_RESOLVE: i32 = -1765328164;
    pub const KT_KVNONOTFOUND: i32 = -1765328154;
}

/// Classifies a GSSAPI failure by its minor status (a krb5 error code).
pub fn classify(minor: u32, mode: Mode) -> Reason {
    // The minor status is the krb5 code's bit pattern.
    match minor.cast_signed() {
        code::C_PRINCIPAL_UNKNOWN => Reason::UnknownPrincipal,
        code::S_PRINCIPAL_UNKNOWN => Reason::UnknownService,
        code::PREAUTH_FAILED | code::BAD_INTEGRITY | code::KT_KVNONOTFOUND => Reason::WrongKeytab,
        code::AP_SKEW | code::KDCREP_SKEW => Reason::ClockSkew,
        // A ticket the agent has just obtained from its keytab can only be
        // expired already if this host's clock runs ahead of the KDC's.
        code::TKT_EXPIRED => match mode {
            Mode::Keytab => Reason::ClockSkew,
            Mode::Cache => Reason::TicketExpired,
        },
        code::KDC_UNREACH | code::REALM_UNKNOWN | code::REALM_CANT_RESOLVE => {
            Reason::KdcUnreachable
        }
        code::CC_NOTFOUND | code::FCC_NOFILE => match mode {
            // With a keytab an empty cache means the keytab gave nothing.
            Mode::Keytab => Reason::NoKeyInKeytab,
            Mode::Cache => Reason::NoTicket,
        },
        code::KT_NOTFOUND => Reason::NoKeyInKeytab,
        _ => Reason::Other,
    }
}

/// What a message about the agent's ticket names.
#[derive(Debug, Clone)]
pub struct Subject {
    /// `agent@REALM`, or "the cache's default principal".
    pub principal: String,
    /// "keytab /etc/…", "credential cache FILE:…".
    pub source: String,
    pub mode: Mode,
    /// The krb5.conf in force, for "which KDCs".
    pub krb5_conf: String,
}

/// One line: what failed and what to do, then GSSAPI's own words.
pub fn explain(reason: Reason, s: &Subject, service: &str, detail: &str) -> String {
    let what = match reason {
        Reason::NoTicket => format!(
            "no ticket for {} in the {}: obtain one (kinit, k5start) or configure `keytab` so that the agent gets its own",
            s.principal, s.source
        ),
        Reason::TicketExpired => format!(
            "the ticket of {} in the {} has expired and was not renewed: renew it (kinit -R, k5start) or configure `keytab` so that the agent renews its own; if it is fresh, this host's clock runs ahead of the KDC's",
            s.principal, s.source
        ),
        Reason::WrongKeytab => format!(
            "the KDC refused the key of {} in the {}: the keytab is stale (the key was changed since it was exported, e.g. by another ktadd) or from another realm; export a fresh keytab",
            s.principal, s.source
        ),
        Reason::NoKeyInKeytab => format!(
            "the {} holds no key for {}: check the principal against `klist -kt` of the keytab, or export its key into it",
            s.source, s.principal
        ),
        Reason::ClockSkew => format!(
            "this host's clock and the KDC's differ by more than the allowed skew (5 minutes by default) for {}: synchronise the clocks (NTP)",
            s.principal
        ),
        Reason::UnknownPrincipal => format!(
            "the KDC does not know {}: check the principal's name and realm (kadmin getprinc)",
            s.principal
        ),
        Reason::UnknownService => format!(
            "the KDC does not know the servers' principal {service}: set `service_name` (its primary, zookeeper by default) or `server_name` (its host) to what the ZooKeeper servers' JAAS principal says"
        ),
        Reason::KdcUnreachable => format!(
            "no KDC answered for {}: check the realm's kdc entries in {} and that the KDC is reachable from this host",
            s.principal, s.krb5_conf
        ),
        Reason::Other => format!("GSSAPI refused {} from the {}", s.principal, s.source),
    };
    let detail: String = detail.chars().filter(|c| !c.is_control()).collect();
    format!("Kerberos: {what} (GSSAPI: {detail})")
}

/// A check that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub reason: Reason,
    /// [`explain`]'s line.
    pub message: String,
}

/// What the agent knows of its ticket, for one cluster.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// When the ticket the last successful check saw expires.
    pub expires: Option<SystemTime>,
    /// When a check first saw that ticket: about when it was issued after
    /// a renewal, the agent's first check otherwise. With `expires`, the
    /// part of its life the agent has seen, which the expiring-ticket
    /// alert compares the time left with.
    pub first_seen: Option<SystemTime>,
    pub last_success: Option<SystemTime>,
    /// The last check's failure, until a check succeeds; with when it began.
    pub failing: Option<(Failure, SystemTime)>,
    /// Failed checks by reason, since the agent started.
    pub errors: BTreeMap<Reason, u64>,
    /// Times a check saw a later expiry than the one before: renewals.
    pub renewals: u64,
}

/// A cluster's [`Credentials`] as one snapshot channel: the Kerberos
/// check writes them without the cluster's lock, outputs read the latest.
/// A reload that keeps the cluster's identity hands the same feed to the
/// new check, so the ticket's history carries over.
#[derive(Debug, Clone, Default)]
pub struct KerberosFeed(std::sync::Arc<tokio::sync::watch::Sender<Credentials>>);

impl KerberosFeed {
    /// See [`Credentials::succeeded`].
    pub fn succeeded(
        &self,
        expires: SystemTime,
        unusable: Vec<Failure>,
        now: SystemTime,
    ) -> Vec<Failure> {
        let mut begun = Vec::new();
        self.0
            .send_modify(|c| begun = c.succeeded(expires, unusable, now));
        begun
    }

    /// See [`Credentials::failed`].
    pub fn failed(&self, failure: Failure, now: SystemTime) -> bool {
        let mut begins = false;
        self.0.send_modify(|c| begins = c.failed(failure, now));
        begins
    }

    /// The credentials now; held only while they are read (writes wait).
    pub fn now(&self) -> tokio::sync::watch::Ref<'_, Credentials> {
        self.0.borrow()
    }
}

impl Credentials {
    /// A check found a ticket valid until `expires`; `unusable` are the
    /// servers whose service ticket it could not get (the others still
    /// serve, so the first of them is kept as a failure beside the ticket).
    /// Returns those failures that begin now, to log once.
    pub fn succeeded(
        &mut self,
        expires: SystemTime,
        unusable: Vec<Failure>,
        now: SystemTime,
    ) -> Vec<Failure> {
        let same = self.expires.is_some_and(|before| {
            let apart = expires
                .duration_since(before)
                .unwrap_or_else(|e| e.duration());
            apart <= SAME_TICKET
        });
        if !same {
            if self.expires.is_some_and(|before| expires > before) {
                self.renewals += 1;
            }
            self.expires = Some(expires);
            self.first_seen = Some(now);
        }
        self.last_success = Some(now);
        let before = self.failing.take();
        let mut begun = Vec::new();
        for f in unusable {
            *self.errors.entry(f.reason).or_default() += 1;
            let since = before
                .as_ref()
                .filter(|(b, _)| *b == f)
                .map(|(_, since)| *since);
            if since.is_none() {
                begun.push(f.clone());
            }
            if self.failing.is_none() {
                self.failing = Some((f, since.unwrap_or(now)));
            }
        }
        begun
    }

    /// A check failed; returns whether this begins a failure (to log once).
    pub fn failed(&mut self, failure: Failure, now: SystemTime) -> bool {
        *self.errors.entry(failure.reason).or_default() += 1;
        let begins = self
            .failing
            .as_ref()
            .is_none_or(|(f, _)| f.reason != failure.reason);
        let since = match &self.failing {
            Some((_, since)) if !begins => *since,
            _ => now,
        };
        self.failing = Some((failure, since));
        begins
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Minor statuses MIT krb5 1.20 returned in the test realm.
    #[test]
    fn what_mit_krb5_said_is_classified() {
        let cases = [
            (2529638918, Mode::Keytab, Reason::UnknownPrincipal),
            (2529638919, Mode::Keytab, Reason::UnknownService),
            (2529638936, Mode::Keytab, Reason::WrongKeytab),
            (2529638943, Mode::Keytab, Reason::WrongKeytab),
            (2529638949, Mode::Keytab, Reason::ClockSkew),
            (2529639060, Mode::Keytab, Reason::ClockSkew),
            (2529638944, Mode::Keytab, Reason::ClockSkew),
            (2529638944, Mode::Cache, Reason::TicketExpired),
            (2529639068, Mode::Cache, Reason::KdcUnreachable),
            (2529639066, Mode::Keytab, Reason::KdcUnreachable),
            (2529639053, Mode::Keytab, Reason::NoKeyInKeytab),
            (2529639053, Mode::Cache, Reason::NoTicket),
            (100001, Mode::Cache, Reason::Other),
        ];
        for (minor, mode, want) in cases {
            assert_eq!(classify(minor, mode), want, "{minor} {mode:?}");
        }
    }

    #[test]
    fn every_explanation_is_one_line_naming_the_principal_or_service() {
        let s = Subject {
            principal: "agent@R".into(),
            source: "keytab /k".into(),
            mode: Mode::Keytab,
            krb5_conf: "/etc/krb5.conf".into(),
        };
        for r in Reason::ALL {
            let m = explain(r, &s, "zookeeper@zk1", "Some\nlibrary text");
            assert!(!m.contains('\n'), "{m}");
            assert!(m.starts_with("Kerberos: "), "{m}");
            assert!(m.ends_with("(GSSAPI: Somelibrary text)"), "{m}");
            assert!(m.contains("agent@R") || m.contains("zookeeper@zk1"), "{m}");
        }
    }

    proptest::proptest! {
        /// krb5 counts the life from the whole second it read; any moment
        /// within that second gives the ticket's own expiry, to the second.
        #[test]
        fn the_expiry_is_the_tickets_whatever_the_fraction(
            second in 0u64..4_000_000_000,
            nanos in 0u32..1_000_000_000,
            expires_in in 0u64..1_000_000,
        ) {
            let read_at = SystemTime::UNIX_EPOCH + Duration::new(second, nanos);
            proptest::prop_assert_eq!(
                expiry(read_at, Duration::from_secs(expires_in)),
                SystemTime::UNIX_EPOCH + Duration::from_secs(second + expires_in)
            );
        }
    }

    #[test]
    fn a_failure_begins_once_and_renewals_count_later_expiries() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let mut c = Credentials::default();
        let f = |r| Failure {
            reason: r,
            message: String::new(),
        };
        assert!(c.failed(f(Reason::KdcUnreachable), t0));
        assert!(!c.failed(f(Reason::KdcUnreachable), t0 + Duration::from_secs(5)));
        assert_eq!(c.failing.as_ref().unwrap().1, t0, "since the first");
        assert!(c.failed(f(Reason::ClockSkew), t0 + Duration::from_secs(9)));
        assert_eq!(c.errors[&Reason::KdcUnreachable], 2);
        let ok = |c: &mut Credentials, expires, at, unusable| {
            c.succeeded(
                t0 + Duration::from_secs(expires),
                unusable,
                t0 + Duration::from_secs(at),
            )
        };
        assert!(ok(&mut c, 60, 10, vec![]).is_empty());
        assert!(c.failing.is_none());
        assert_eq!(c.renewals, 0, "the first ticket is no renewal");
        assert_eq!(c.first_seen, Some(t0 + Duration::from_secs(10)));
        ok(&mut c, 60, 20, vec![]);
        assert_eq!(c.renewals, 0, "the same ticket again");
        // Read a second apart on either side: still that ticket, its
        // expiry and first sight unchanged.
        ok(&mut c, 61, 25, vec![]);
        ok(&mut c, 59, 30, vec![]);
        assert_eq!(c.renewals, 0, "a second of reading is no renewal");
        assert_eq!(c.expires, Some(t0 + Duration::from_secs(60)));
        assert_eq!(c.first_seen, Some(t0 + Duration::from_secs(10)));
        ok(&mut c, 95, 40, vec![]);
        assert_eq!(c.renewals, 1);
        assert_eq!(c.first_seen, Some(t0 + Duration::from_secs(40)));
        // One member's service principal unknown: said once, kept since.
        let service = || Failure {
            reason: Reason::UnknownService,
            message: "zookeeper@zk3".into(),
        };
        assert_eq!(ok(&mut c, 95, 50, vec![service()]), vec![service()]);
        assert!(ok(&mut c, 95, 60, vec![service()]).is_empty());
        assert_eq!(c.failing.as_ref().unwrap().1, t0 + Duration::from_secs(50));
        assert_eq!(c.errors[&Reason::UnknownService], 2);
    }

    /// The check writes through its handle and every other handle (the
    /// scrape's, the next check's after a reload) reads the same.
    #[test]
    fn a_feed_is_one_set_of_credentials_for_every_handle() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let feed = KerberosFeed::default();
        let check = feed.clone();
        let failure = Failure {
            reason: Reason::KdcUnreachable,
            message: "no KDC".into(),
        };
        assert!(check.failed(failure.clone(), t0));
        assert!(!check.failed(failure, t0 + Duration::from_secs(5)));
        assert_eq!(feed.now().errors[&Reason::KdcUnreachable], 2);
        assert!(
            check
                .succeeded(
                    t0 + Duration::from_secs(600),
                    vec![],
                    t0 + Duration::from_secs(9)
                )
                .is_empty()
        );
        let now = feed.now();
        assert!(now.failing.is_none());
        assert_eq!(now.expires, Some(t0 + Duration::from_secs(600)));
    }
}
