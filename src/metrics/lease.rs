//! Families of the lease source: per exported election what the
//! application's lease says against ZooKeeper's master, per election set
//! how the source reads. Per-election families are absent while the set's
//! source fails: its last reading is no evidence of now.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::*;
use super::trees::each_tree;
use super::{Scrape, names};
use crate::model::election_tree::ElectionTree;
use crate::model::lease::{Failure, LeaseBook, Reject, RowAt, Verdict};

/// One exported election of a leased set while its source reads.
struct Leased<'a> {
    cluster: &'a str,
    path: &'a str,
    verdict: Option<Verdict>,
    row: Option<RowAt<'a>>,
}

fn leased<'a>(s: &Scrape<'a>) -> Vec<Leased<'a>> {
    let mut rows = Vec::new();
    for (c, survey) in s.clusters.iter().zip(&s.surveys) {
        for &(tree, path, election) in &survey.exported {
            let Some(elections) = tree.as_elections() else {
                continue;
            };
            if !elections.lease_book().is_some_and(LeaseBook::fresh) {
                continue;
            }
            rows.push(Leased {
                cluster: c.name(),
                path,
                verdict: tree.lease_verdict(path, election),
                row: elections.lease_row(path),
            });
        }
    }
    rows
}

/// The lease book of a tree, if it is an election tree with a lease.
fn book(tree: &crate::model::tree::Tree) -> Option<&LeaseBook> {
    tree.as_elections().and_then(ElectionTree::lease_book)
}

pub(super) fn encode_leases(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let rows = leased(s);
    let each = |f: &mut dyn FnMut(&Labels, &Leased) -> fmt::Result| -> fmt::Result {
        for r in &rows {
            f(
                &Labels::new("ensemble", r.cluster).with("election", r.path),
                r,
            )?;
        }
        Ok(())
    };
    family(
        enc,
        names::ELECTION_LEASE_AGREES,
        "1 if the application's lease is held, unexpired, by ZooKeeper's master; 0 for any other verdict; absent when the last reading cannot tell or the lease source fails.",
        MetricType::Gauge,
        |m| {
            each(&mut |l, r| match r.verdict {
                Some(v) => gauge(m, l, f64::from(u8::from(v == Verdict::Agrees))),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_LEASE_STATE,
        "What the lease says against ZooKeeper's master (state: agrees, split_brain, handing_over, expired, not_taken, no_row, no_candidates, unconfirmed); always 1, absent when it cannot tell or the source fails.",
        MetricType::Gauge,
        |m| {
            each(&mut |l, r| match r.verdict {
                Some(v) => gauge(m, &l.with("state", v.label()), 1.0),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::ELECTION_LEASE_REMAINING_SECONDS,
        "lease_until - now() of the election's lease row at the last reading, by the database's clock; negative once expired.",
        MetricType::Gauge,
        |m| each(&mut |l, r| r.row.map_or(Ok(()), |row| gauge(m, l, row.remaining))),
    )?;
    family(
        enc,
        names::ELECTION_LEASE_HEARTBEAT_AGE_SECONDS,
        "now() - last_seen of the election's lease row at the last reading, by the database's clock: how long ago the holder last wrote.",
        MetricType::Gauge,
        |m| each(&mut |l, r| r.row.map_or(Ok(()), |row| gauge(m, l, row.heartbeat_age))),
    )?;
    family(
        enc,
        names::ELECTION_LEASE_HOLDER,
        "Who holds the election's lease row at the last reading (holder, cut like an identity); always 1.",
        MetricType::Gauge,
        |m| {
            each(&mut |l, r| {
                r.row
                    .map_or(Ok(()), |row| gauge(m, &l.with("holder", row.holder), 1.0))
            })
        },
    )?;
    encode_sources(enc, s)
}

const QUERY_ROWS_HELP: &str = "Rows the last lease query returned: every row at a reading of every row (each lease.full_every), the rows written lately otherwise.";

/// The last reading of a tree's lease source.
fn last(tree: &crate::model::tree::Tree) -> Option<&crate::model::lease::LeaseReading> {
    book(tree).and_then(|b| b.last.as_ref())
}

/// The per-set families of each lease source.
fn encode_sources(enc: &mut DescriptorEncoder, s: &Scrape) -> fmt::Result {
    let clusters = s.clusters;
    family(
        enc,
        names::LEASE_UP,
        "1 if the set's last lease query gave a reading; 0 while it fails (no lease alert fires or resolves then).",
        MetricType::Gauge,
        |m| {
            each_tree(clusters, |l, t| {
                book(t).map_or(Ok(()), |b| gauge(m, l, f64::from(u8::from(b.fresh()))))
            })
        },
    )?;
    family(
        enc,
        names::LEASE_READINGS,
        "Lease queries that gave a reading.",
        MetricType::Counter,
        |m| {
            each_tree(clusters, |l, t| {
                book(t).map_or(Ok(()), |b| counter(m, l, b.readings))
            })
        },
    )?;
    family(
        enc,
        names::LEASE_FAILURES,
        "Lease queries that gave no reading, by reason: config (DSN or password file), connect, query (table, columns, types), timeout.",
        MetricType::Counter,
        |m| {
            each_tree(clusters, |l, t| {
                let Some(b) = book(t) else {
                    return Ok(());
                };
                for why in Failure::ALL {
                    let n = b.failures.get(&why).copied().unwrap_or(0);
                    counter(m, &l.with("reason", why.label()), n)?;
                }
                Ok(())
            })
        },
    )?;
    family(
        enc,
        names::LEASE_QUERY_DURATION_SECONDS,
        "How long the last successful lease query took, connection included when it connected.",
        MetricType::Gauge,
        |m| {
            each_tree(clusters, |l, t| {
                last(t).map_or(Ok(()), |r| gauge(m, l, r.took.as_secs_f64()))
            })
        },
    )?;
    family(
        enc,
        names::LEASE_QUERY_ROWS,
        QUERY_ROWS_HELP,
        MetricType::Gauge,
        |m| {
            each_tree(clusters, |l, t| {
                last(t).map_or(Ok(()), |r| gauge(m, l, r.returned as f64))
            })
        },
    )?;
    family(
        enc,
        names::LEASE_LAST_READING_TIMESTAMP_SECONDS,
        "Unix time the last successful lease query was sent.",
        MetricType::Gauge,
        |m| {
            each_tree(clusters, |l, t| match last(t).and_then(|r| r.started) {
                Some(at) => gauge(m, l, unix_seconds(at)),
                None => Ok(()),
            })
        },
    )?;
    family(
        enc,
        names::LEASE_ROWS,
        "Usable rows of the table as the readings built it: every row of the last reading of every row, with the rows written since laid over.",
        MetricType::Gauge,
        |m| {
            each_tree(clusters, |l, t| {
                last(t).map_or(Ok(()), |r| gauge(m, l, r.rows.len() as f64))
            })
        },
    )?;
    family(
        enc,
        names::LEASE_ROWS_REJECTED,
        "Rows of the last reading of every row not used, by reason: null (a NULL or unconvertible column, an empty holder), too_long (key), duplicate (a key in several rows), future (last_seen in the database's future: a time-zone mismatch), over_cap (1 when the table had more than max_rows rows).",
        MetricType::Gauge,
        |m| {
            each_tree(clusters, |l, t| {
                let Some(r) = last(t) else {
                    return Ok(());
                };
                for why in Reject::ALL {
                    let n = r.rejected.get(&why).copied().unwrap_or(0);
                    gauge(m, &l.with("reason", why.label()), n as f64)?;
                }
                Ok(())
            })
        },
    )?;
    family(
        enc,
        names::LEASE_ROWS_UNMATCHED,
        "Usable rows of the table whose key no watched election has (counted anew at each reading of every row, and for the rows new since).",
        MetricType::Gauge,
        |m| {
            each_tree(clusters, |l, t| {
                book(t)
                    .filter(|b| b.last.is_some())
                    .map_or(Ok(()), |b| gauge(m, l, b.unmatched as f64))
            })
        },
    )?;
    family(
        enc,
        names::TREE_LEASE_ELECTIONS,
        "Elections of a leased set by lease verdict, every one watched whether it has series of its own or not; absent while the source fails.",
        MetricType::Gauge,
        |m| {
            for (c, survey) in clusters.iter().zip(&s.surveys) {
                for (tree, counts) in c.trees().iter().zip(&survey.leases) {
                    if !book(tree).is_some_and(LeaseBook::fresh) {
                        continue;
                    }
                    let l = Labels::new("ensemble", c.name()).with("tree", tree.pattern().as_str());
                    for v in Verdict::ALL {
                        gauge(m, &l.with("state", v.label()), counts[v.index()] as f64)?;
                    }
                }
            }
            Ok(())
        },
    )
}
