use super::*;
use crate::target::Target;

fn values(spec: &str) -> Vec<String> {
    parse_param(spec).unwrap_or_else(|e| panic!("{spec}: {e}")).values
}

#[test]
fn lists_and_ranges() {
    assert_eq!(values("heap=64m,80m,96m"), ["64m", "80m", "96m"]);
    assert_eq!(values("n=1..16:x2"), ["1", "2", "4", "8", "16"]);
    assert_eq!(
        values("n=1..10:1"),
        (1..=10).map(|i| i.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(values("n=1..4"), ["1", "2", "3", "4"]);
    assert_eq!(values("n=0..1:0.25"), ["0", "0.25", "0.5", "0.75", "1"]);
    // Float steps end inclusively at the end despite rounding.
    assert_eq!(values("c=0.1..0.3:0.1"), ["0.1", "0.2", "0.3"]);
    assert_eq!(values("cpus=0.25..1:x2"), ["0.25", "0.5", "1"]);
    // The end need not be on the grid.
    assert_eq!(values("n=1..20:x3"), ["1", "3", "9"]);
    assert_eq!(values("n=5..5"), ["5"]);
}

#[test]
fn bad_params_say_why() {
    for (spec, says) in [
        ("heap", "NAME=V1,V2"),
        ("=1,2", "not a parameter name"),
        ("1x=1", "not a parameter name"),
        ("h p=1", "not a parameter name"),
        ("n=1,,2", "empty value"),
        ("n=", "empty value"),
        ("n=1,1", "listed twice"),
        ("n=a]", "bracket"),
        ("n=10..1", "backwards"),
        ("n=1..x", "not a number"),
        ("n=1..16:x1", "above 1"),
        ("n=0..16:x2", "start above 0"),
        ("n=1..16:0", "above 0"),
        ("n=1..16:-1", "above 0"),
        ("n=1..1e9:1", "more than"),
        ("n=inf..1", "not a number"),
    ] {
        let e = parse_param(spec).expect_err(spec);
        assert!(e.contains(says), "{spec}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

fn sweep(specs: &[&str]) -> Sweep {
    Sweep {
        params: specs.iter().map(|s| parse_param(s).unwrap()).collect(),
        compare_along: None,
    }
}

#[test]
fn several_params_form_a_grid() {
    let s = sweep(&["heap=64m,96m", "n=1..4:x2"]);
    let names: Vec<String> = s.grid().iter().map(|p| point_name("a", p)).collect();
    assert_eq!(
        names,
        [
            "a[heap=64m,n=1]",
            "a[heap=64m,n=2]",
            "a[heap=64m,n=4]",
            "a[heap=96m,n=1]",
            "a[heap=96m,n=2]",
            "a[heap=96m,n=4]"
        ]
    );
    assert_eq!(sweep(&[]).grid(), vec![Vec::<(String, String)>::new()]);
    assert!(sweep(&["a=1..100", "b=1..100"])
        .check()
        .unwrap_err()
        .contains("combinations"));
    assert!(sweep(&["a=1,2", "a=3"]).check().unwrap_err().contains("twice"));
    let mut s = sweep(&["a=1,2"]);
    s.compare_along = Some("b".into());
    assert!(s.check().unwrap_err().contains("no such parameter"));
    assert!(s.mark_resource("b").unwrap_err().contains("the parameters are a"));
    s.mark_resource("a").unwrap();
    assert!(s.params[0].resource);
}

#[test]
fn substitution() {
    let pt = vec![("heap".to_string(), "64m".to_string()), ("n".into(), "2".into())];
    let mut used = BTreeSet::new();
    let sub = |t: &str, used: &mut BTreeSet<String>| substitute(t, &pt, used);
    assert_eq!(sub("-Xmx{heap}", &mut used).unwrap(), "-Xmx64m");
    assert_eq!(sub("{n}{n}/{heap}", &mut used).unwrap(), "22/64m");
    assert_eq!(used.iter().collect::<Vec<_>>(), ["heap", "n"]);
    let mut none = BTreeSet::new();
    // Not parameter names: left alone.
    assert_eq!(
        sub("awk '{print $1}' {} { n } {", &mut none).unwrap(),
        "awk '{print $1}' {} { n } {"
    );
    // The escape for a literal {name}.
    assert_eq!(sub("{{heap}} is {heap}", &mut none).unwrap(), "{heap} is 64m");
    assert_eq!(none.iter().collect::<Vec<_>>(), ["heap"]);
    let e = sub("-Xmx{hepa}", &mut none).unwrap_err();
    assert!(
        e.contains("unknown parameter {hepa}") && e.contains("--param hepa="),
        "{e}"
    );
    assert!(e.contains("{{hepa}}"), "{e}");
}

fn variant(name: &str, params: &[(&str, &str)]) -> Variant {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Variant {
        name: point_name(name, &params),
        target: Target::new(vec!["true".into()], Vec::new(), None).unwrap(),
        readiness: "exit".into(),
        params,
    }
}

#[test]
fn points_compare_with_the_baseline_at_the_same_values() {
    let vs = [
        variant("a", &[("heap", "64m")]),
        variant("a", &[("heap", "96m")]),
        variant("b", &[("heap", "64m")]),
        variant("b", &[("heap", "96m")]),
    ];
    assert_eq!(vs[3].base_name(), "b");
    assert_eq!(vs[3].name, "b[heap=96m]");
    let base: Vec<_> = (0..4).map(|i| baseline_of(&vs, i)).collect();
    assert_eq!(base, [None, None, Some(0), Some(1)]);
    let along: Vec<_> = (0..4).map(|i| first_along(&vs, i, "heap")).collect();
    assert_eq!(along, [None, Some(0), None, Some(2)]);
    // Without a sweep: every variant against the first.
    let plain = [variant("x", &[]), variant("y", &[]), variant("z", &[])];
    let base: Vec<_> = (0..3).map(|i| baseline_of(&plain, i)).collect();
    assert_eq!(base, [None, Some(0), Some(0)]);
    assert_eq!(first_along(&plain, 1, "heap"), None);
}

#[test]
fn along_one_parameter_of_a_grid_keeps_the_others() {
    let vs = [
        variant("a", &[("heap", "64m"), ("n", "1")]),
        variant("a", &[("heap", "64m"), ("n", "2")]),
        variant("a", &[("heap", "96m"), ("n", "1")]),
        variant("a", &[("heap", "96m"), ("n", "2")]),
    ];
    let along: Vec<_> = (0..4).map(|i| first_along(&vs, i, "heap")).collect();
    assert_eq!(along, [None, None, Some(0), Some(1)]);
}

#[test]
fn resources_order_by_cost() {
    let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        by_cost(&v(&["1g", "64m", "512M", "96m"])),
        v(&["64m", "96m", "512M", "1g"])
    );
    assert_eq!(by_cost(&v(&["1769", "128", "512"])), v(&["128", "512", "1769"]));
    // Not all sizes: the order given.
    assert_eq!(by_cost(&v(&["small", "1g"])), v(&["small", "1g"]));
    assert_eq!(cost("256MiB"), Some(256.0 * 1024.0 * 1024.0));
    assert_eq!(cost("0.5"), Some(0.5));
    assert_eq!(cost("fast"), None);
}

#[test]
fn params_serialise_as_an_ordered_object() {
    let v = variant("a", &[("z", "1"), ("a", "2")]);
    let json = serde_json::to_string(&v).unwrap();
    assert!(json.contains(r#""params":{"z":"1","a":"2"}"#), "{json}");
    #[derive(serde::Deserialize)]
    struct P {
        #[serde(with = "params_serde")]
        params: Vec<(String, String)>,
    }
    let back: P = serde_json::from_str(r#"{"params":{"z":"1","a":"2"}}"#).unwrap();
    assert_eq!(back.params, v.params);
    // No sweep, no key.
    assert!(serde_json::to_value(variant("a", &[]))
        .unwrap()
        .get("params")
        .is_none());
}
