//! A sweep point as a variant carries it: its parameter values, in parameter
//! order, and the name they give it (`BASE[name=value,...]`). Apart from `sweep`
//! (which makes the points) so that `plan`'s `Variant` can name and serialise
//! its own values.

/// The name of a point of variant `base`: `base[heap=64m,n=2]`.
pub fn point_name(base: &str, point: &[(String, String)]) -> String {
    if point.is_empty() {
        return base.to_string();
    }
    let vals: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{base}[{}]", vals.join(","))
}

/// `params` serialised as a JSON object in parameter order (`{"heap": "64m"}`):
/// what the store's `params_json` column and the JSON export hold.
pub mod params_serde {
    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(params: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(params.len()))?;
        for (k, v) in params {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Vec<(String, String)>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of parameter values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    out.push((k, v));
                }
                Ok(out)
            }
        }
        d.deserialize_map(InOrder)
    }
}
