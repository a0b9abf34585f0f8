//! The statements of the lease source: which rows one query reads, and
//! how, with every identifier checked and quoted and only numbers (or a
//! bound parameter) in the text.

use std::time::Duration;

use super::{HOLDER_CHARS, KEY_CHARS};
use crate::config::{Dialect, LeaseSource};

/// Quotes a checked identifier (`schema.table` per part).
pub(super) fn quoted(dialect: Dialect, ident: &str) -> String {
    let q = match dialect {
        Dialect::Postgres => '"',
        Dialect::MySql => '`',
    };
    ident
        .split('.')
        .map(|p| format!("{q}{p}{q}"))
        .collect::<Vec<_>>()
        .join(".")
}

/// Which rows one query reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Rows<'a> {
    /// The next page of a pass over every row: the rows after this key
    /// (the first page: from the start), at most this many.
    Page(Option<&'a str>, u64),
    /// The rows whose `last_seen` lies less than this before the
    /// database's `now()` (an index on `last_seen` makes it a range scan).
    Changed(Duration),
}

/// The one query of a set: key, holder, seconds until the lease ends and
/// seconds since the holder wrote, all computed by the database; `rows`
/// says which. Only numbers enter the statement; a page's last key is a
/// bound parameter.
pub fn query(dialect: Dialect, s: &LeaseSource, rows: &Rows<'_>) -> String {
    let q = |i: &str| quoted(dialect, i);
    let (key, holder, until, seen, table) = (
        q(&s.key),
        q(&s.holder),
        q(&s.lease_until),
        q(&s.last_seen),
        q(&s.table),
    );
    let key_chars = KEY_CHARS + 1;
    let select = match dialect {
        Dialect::Postgres => format!(
            "SELECT SUBSTRING(CAST({key} AS TEXT) FROM 1 FOR {key_chars}), \
             SUBSTRING(CAST({holder} AS TEXT) FROM 1 FOR {HOLDER_CHARS}), \
             CAST(EXTRACT(EPOCH FROM ({until} - now())) AS DOUBLE PRECISION), \
             CAST(EXTRACT(EPOCH FROM (now() - {seen})) AS DOUBLE PRECISION) \
             FROM {table}"
        ),
        Dialect::MySql => format!(
            "SELECT SUBSTRING(CAST({key} AS CHAR), 1, {key_chars}), \
             SUBSTRING(CAST({holder} AS CHAR), 1, {HOLDER_CHARS}), \
             TIMESTAMPDIFF(MICROSECOND, NOW(6), {until}) / 1e6, \
             TIMESTAMPDIFF(MICROSECOND, {seen}, NOW(6)) / 1e6 \
             FROM {table}"
        ),
    };
    match rows {
        Rows::Changed(since) => {
            // Whole microseconds: a number, never text.
            let us = u64::try_from(since.as_micros()).unwrap_or(u64::MAX);
            let limit = s.max_rows + 1;
            match dialect {
                Dialect::Postgres => format!(
                    "{select} WHERE {seen} >= now() - {us} * interval '1 microsecond' LIMIT {limit}"
                ),
                Dialect::MySql => format!(
                    "{select} WHERE {seen} >= NOW(6) - INTERVAL {us} MICROSECOND LIMIT {limit}"
                ),
            }
        }
        Rows::Page(after, limit) => {
            // PostgreSQL compares the key as text (a varchar key's index
            // serves it); MySQL compares the column with the text as it
            // compares its own values.
            let (by, bound) = match dialect {
                Dialect::Postgres => (format!("CAST({key} AS TEXT)"), "$1"),
                Dialect::MySql => (key.clone(), "?"),
            };
            let after = if after.is_some() {
                format!(" WHERE {by} > {bound}")
            } else {
                String::new()
            };
            format!("{select}{after} ORDER BY {by} LIMIT {limit}")
        }
    }
}
