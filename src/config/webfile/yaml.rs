//! The web config's YAML, read by yaml-rust2 and handed to serde as a
//! `serde_json::Value`: one parser and one serde path, with the key of a
//! value serde refuses (`tls_server_config.cert_file`) named by
//! serde_path_to_error.

use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// Deeper nesting than any web config has is refused rather than
/// followed: the conversion and serde both recurse.
const MAX_DEPTH: usize = 32;

/// `text` (one YAML document, a mapping or empty) as `T`; the error names
/// the key (dotted, empty for the whole file) and what is wrong.
pub(super) fn from_str<T: DeserializeOwned + Default>(text: &str) -> Result<T, (String, String)> {
    let whole = |m: String| (String::new(), m);
    let docs = YamlLoader::load_from_str(text).map_err(|e| whole(e.to_string()))?;
    if docs.len() > 1 {
        return Err(whole("holds more than one YAML document".into()));
    }
    let value = match docs.first() {
        None | Some(Yaml::Null) => return Ok(T::default()),
        Some(top @ Yaml::Hash(_)) => value(top, 0).map_err(whole)?,
        Some(_) => {
            return Err(whole(
                "is not a mapping of the web config's sections".into(),
            ));
        }
    };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut key = e.path().to_string();
        let message = e.into_inner().to_string();
        // An unknown key is a mistake of the table that holds it, as the
        // message names the key and the ones that table takes.
        if message.starts_with("unknown field") {
            key.truncate(key.rfind('.').unwrap_or(0));
        }
        (if key == "." { String::new() } else { key }, message)
    })
}

fn value(yaml: &Yaml, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("nests deeper than {MAX_DEPTH} levels"));
    }
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::Number((*i).into()),
        Yaml::Real(text) => text
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("`{text}` is not a finite number"))?,
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| value(i, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs {
                map.insert(key(k)?, value(v, depth + 1)?);
            }
            Value::Object(map)
        }
        // The loader copies what an alias names; one left is unresolvable.
        Yaml::Alias(_) => return Err("uses a YAML alias that names nothing".into()),
        Yaml::BadValue => return Err("holds a value YAML cannot read".into()),
    })
}

/// A mapping key as text: user names and header names may read as numbers.
fn key(yaml: &Yaml) -> Result<String, String> {
    match yaml {
        Yaml::String(s) | Yaml::Real(s) => Ok(s.clone()),
        Yaml::Integer(i) => Ok(i.to_string()),
        Yaml::Boolean(b) => Ok(b.to_string()),
        _ => Err(format!("has a key that is not text: {yaml:?}")),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Top {
        users: Option<BTreeMap<String, String>>,
        inner: Option<Inner>,
    }

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        flag: Option<bool>,
        ratio: Option<f64>,
    }

    #[test]
    fn values_and_keys_reach_serde_as_written() {
        let top: Top =
            from_str("users:\n  123: h\n  alice: x\ninner:\n  flag: true\n  ratio: 0.5\n").unwrap();
        assert_eq!(
            top.users.unwrap().keys().collect::<Vec<_>>(),
            ["123", "alice"]
        );
        let inner = top.inner.unwrap();
        assert_eq!((inner.flag, inner.ratio), (Some(true), Some(0.5)));
        assert!(from_str::<Top>("").unwrap().users.is_none());
        assert!(
            from_str::<Top>("# only a comment\n")
                .unwrap()
                .users
                .is_none()
        );
    }

    #[test]
    fn a_refused_value_names_its_key() {
        let e = from_str::<Top>("inner:\n  flag: maybe\n").unwrap_err();
        assert_eq!(e.0, "inner.flag", "{e:?}");
        let e = from_str::<Top>("inner:\n  flg: true\n").unwrap_err();
        assert_eq!(e.0, "inner", "{e:?}");
        assert!(e.1.contains("unknown field `flg`"), "{e:?}");
        let e = from_str::<Top>("nope: 1\n").unwrap_err();
        assert_eq!(e.0, "", "{e:?}");
    }

    #[test]
    fn what_yaml_allows_and_a_web_config_does_not_is_refused_in_words() {
        for (text, says) in [
            ("a: 1\n---\nb: 2\n", "more than one YAML document"),
            ("- 1\n", "not a mapping"),
            ("users:\n  [1]: x\n", "not text"),
            ("inner:\n  ratio: .nan\n", "finite"),
        ] {
            let e = from_str::<Top>(text).unwrap_err();
            assert!(e.1.contains(says), "{text}: {e:?}");
        }
        let deep = format!("users: {}1{}\n", "[".repeat(40), "]".repeat(40));
        assert!(from_str::<Top>(&deep).unwrap_err().1.contains("deeper"));
    }
}
