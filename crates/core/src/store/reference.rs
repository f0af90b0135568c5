//! References to stored results: `REF`, `REF:VARIANT`, and sweep points
//! `REF:VARIANT[name=value,...]` or `REF:[name=value,...]` (every variant at
//! those values). REF is an id, `latest`, `latest~N` or a git commit prefix
//! ([`super::Store::resolve`]). Brackets cannot clash with a name (bench refuses
//! them in `--name`) nor with compare's `NAME@ID` labels.

use crate::experiment::sweep::check_name;
use crate::experiment::Variant;
use anyhow::{bail, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The experiment part (before the first `:`).
    pub experiment: String,
    pub variant: Option<Selector>,
}

/// Which variants of an experiment a reference picks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    /// A variant's name or, for sweep points, its base name.
    pub name: Option<String>,
    /// Values every picked variant has (others may vary).
    pub params: Vec<(String, String)>,
}

impl Reference {
    pub fn parse(s: &str) -> Result<Reference> {
        let (experiment, variant) = match s.split_once(':') {
            Some((r, v)) if !v.is_empty() => (r, Some(Selector::parse(v)?)),
            Some((r, _)) => (r, None),
            None => (s, None),
        };
        Ok(Reference {
            experiment: experiment.to_string(),
            variant,
        })
    }
}

impl Selector {
    /// `NAME`, `NAME[k=v,...]` or `[k=v,...]`.
    pub fn parse(s: &str) -> Result<Selector> {
        let Some(open) = s.find('[') else {
            if s.contains(']') {
                bail!("bad variant '{s}': a ']' without '[' (write NAME[param=value,...])");
            }
            return Ok(Selector {
                name: Some(s.to_string()),
                params: Vec::new(),
            });
        };
        let bad = |why: &str| {
            anyhow::anyhow!("bad variant '{s}': {why} (write NAME[param=value,...] or [param=value])")
        };
        let inner = s[open + 1..]
            .strip_suffix(']')
            .ok_or_else(|| bad("it does not end with ']'"))?;
        let mut params = Vec::new();
        for kv in inner.split(',') {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| bad(&format!("'{kv}' is not param=value")))?;
            check_name(k).map_err(|e| bad(&e))?;
            if v.is_empty() || v.contains(['[', ']']) {
                return Err(bad(&format!("'{kv}' has no usable value")));
            }
            if params.iter().any(|(n, _): &(String, String)| n == k) {
                return Err(bad(&format!("{k} is given twice")));
            }
            params.push((k.to_string(), v.to_string()));
        }
        let name = &s[..open];
        Ok(Selector {
            name: (!name.is_empty()).then(|| name.to_string()),
            params,
        })
    }

    pub fn matches(&self, v: &Variant) -> bool {
        self.matches_parts(&v.name, v.base_name(), &v.params)
    }

    /// For a name alone (history's listing): `base[k=v,...]` read back.
    pub fn matches_name(&self, name: &str) -> bool {
        match Selector::parse(name) {
            Ok(Selector { name: base, params }) if !params.is_empty() => {
                self.matches_parts(name, base.as_deref().unwrap_or(""), &params)
            }
            _ => self.matches_parts(name, name, &[]),
        }
    }

    fn matches_parts(&self, full: &str, base: &str, params: &[(String, String)]) -> bool {
        let named = self.name.as_deref().is_none_or(|n| n == full || n == base);
        named && self.params.iter().all(|p| params.contains(p))
    }

    pub fn has_params(&self) -> bool {
        !self.params.is_empty()
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::experiment::sweep::point_name(
            self.name.as_deref().unwrap_or(""),
            &self.params,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::sweep::point_name;
    use crate::experiment::Kind;
    use crate::target::Target;

    fn p(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn variant(base: &str, params: &[(&str, &str)]) -> Variant {
        Variant {
            name: point_name(base, &p(params)),
            target: Target::new(vec!["true".into()], Vec::new(), None).unwrap(),
            readiness: "exit".into(),
            params: p(params),
        }
    }

    #[test]
    fn forms() {
        let r = Reference::parse("latest:agent[heap=64m]").unwrap();
        assert_eq!(r.experiment, "latest");
        let sel = r.variant.unwrap();
        assert_eq!(sel.name.as_deref(), Some("agent"));
        assert_eq!(sel.params, p(&[("heap", "64m")]));
        assert_eq!(sel.to_string(), "agent[heap=64m]");
        let r = Reference::parse("12:[heap=64m,n=2]").unwrap();
        assert_eq!(r.experiment, "12");
        assert_eq!(r.variant.as_ref().unwrap().name, None);
        assert_eq!(Reference::parse("latest~1").unwrap().variant, None);
        assert_eq!(Reference::parse("latest:").unwrap().variant, None);
        assert_eq!(
            Reference::parse("1a2b:main")
                .unwrap()
                .variant
                .unwrap()
                .name
                .as_deref(),
            Some("main")
        );
        for bad in [
            "latest:a[heap]",
            "latest:a[heap=64m",
            "latest:a]",
            "latest:a[=1]",
            "latest:a[x=1,x=2]",
            "latest:a[x=]",
        ] {
            let e = Reference::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("bad variant") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn picks_points() {
        let vs = [
            variant("agent", &[("heap", "64m"), ("n", "1")]),
            variant("agent", &[("heap", "64m"), ("n", "2")]),
            variant("agent", &[("heap", "96m"), ("n", "1")]),
            variant("none", &[("heap", "64m"), ("n", "1")]),
            variant("plain", &[]),
        ];
        let pick = |s: &str| -> Vec<usize> {
            let sel = Selector::parse(s).unwrap();
            (0..vs.len()).filter(|&i| sel.matches(&vs[i])).collect()
        };
        assert_eq!(pick("agent[heap=64m,n=2]"), [1]);
        // Any order of the values.
        assert_eq!(pick("agent[n=2,heap=64m]"), [1]);
        assert_eq!(pick("agent[heap=64m]"), [0, 1]);
        assert_eq!(pick("agent"), [0, 1, 2]);
        assert_eq!(pick("[heap=64m,n=1]"), [0, 3]);
        assert_eq!(pick("plain"), [4]);
        assert_eq!(pick("agent[heap=1g]"), Vec::<usize>::new());
        // A full stored name picks that point.
        assert_eq!(pick("none[heap=64m,n=1]"), [3]);
        let sel = Selector::parse("agent[heap=64m]").unwrap();
        assert!(sel.matches_name("agent[heap=64m,n=1]"));
        assert!(!sel.matches_name("agent[heap=96m,n=1]"));
        assert!(!sel.matches_name("agent"));
        assert!(Selector::parse("agent").unwrap().matches_name("agent[heap=96m]"));
    }

    /// `Store::resolve` takes a whole reference: the variant part is checked
    /// and the experiment part resolved as before.
    #[test]
    fn resolve_reads_the_experiment_part() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = crate::store::Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
        let meta = crate::store::meta::collect();
        let settings = crate::store::tests::settings();
        let first = store
            .begin(&meta, Kind::Bench, &settings, &[variant("a", &[("heap", "64m")])])
            .unwrap();
        let second = store
            .begin(&meta, Kind::Bench, &settings, &[variant("a", &[("heap", "96m")])])
            .unwrap();
        assert_eq!(store.resolve("latest:a[heap=96m]").unwrap(), second);
        assert_eq!(store.resolve("latest~1:[heap=64m]").unwrap(), first);
        assert_eq!(store.resolve(&format!("{first}:a")).unwrap(), first);
        let e = store.resolve("latest:a[heap").unwrap_err().to_string();
        assert!(e.starts_with("bad variant 'a[heap'"), "{e}");
        let e = store.resolve("newest:a[heap=1]").unwrap_err().to_string();
        assert!(e.contains("bad experiment reference 'newest'"), "{e}");
        // `latest:NAME` skips experiments without such a variant (an explain's
        // arms, a tune's candidates): it picked the newest of any kind.
        let arms: Vec<Variant> = ["untraced", "traced", "adapted"]
            .iter()
            .map(|n| variant(n, &[]))
            .collect();
        let explain = store.begin(&meta, Kind::Explain, &settings, &arms).unwrap();
        assert_eq!(store.resolve("latest").unwrap(), explain);
        assert_eq!(store.resolve("latest:a").unwrap(), second);
        assert_eq!(store.resolve("latest~1:a").unwrap(), first);
        assert_eq!(store.resolve("latest:traced").unwrap(), explain);
        // A name that is a prefix of another's is not its sweep point.
        assert!(store.resolve("latest:trace").is_err());
        let e = store.resolve("latest~2:a").unwrap_err().to_string();
        assert!(e.contains("with a variant 'a'"), "{e}");
    }
}
