//! The document around the sections: head (CSP, inline CSS), contents, a small
//! inline script that shows an element's `data-tip` on hover or keyboard focus.

use maud::{html, Markup, PreEscaped, DOCTYPE};

/// Nothing may be fetched: inline styles and scripts only, images only as data: URLs.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

const CSS: &str = r#"
:root { --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #fff; --band: #f6f8fa; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
       max-width: 980px; margin: 0 auto; padding: 1rem 1.5rem 4rem; }
h1 { font-size: 1.6rem; margin: .5rem 0; } h2 { border-bottom: 1px solid var(--line); padding-bottom: .2rem; margin-top: 2.5rem; }
h3 { margin: 1.6rem 0 .4rem; } h4 { margin: 1.2rem 0 .3rem; }
nav ul { display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; padding: 0; list-style: none; }
a { color: #0969da; } a:focus, [data-tip]:focus { outline: 2px solid #0969da; outline-offset: 1px; }
table { border-collapse: collapse; margin: .4rem 0 1rem; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .6rem; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; white-space: nowrap; } caption { text-align: left; color: var(--muted); padding: .2rem 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre { background: var(--band); padding: .6rem .8rem; white-space: pre-wrap; overflow-wrap: anywhere; border-radius: 4px; }
p.verdict { font-weight: 600; margin: .2rem 0; } p.note, .muted { color: var(--muted); }
figure { margin: .6rem 0 1rem; } figcaption { color: var(--muted); font-size: .9rem; }
svg.chart { width: 100%; height: auto; display: block; font-size: 11px; }
svg .axis line { stroke: #8c959f; } svg .axis line.grid { stroke: #eaeef2; } svg text { fill: var(--fg); }
svg text.label { fill: var(--muted); } svg .dot { fill-opacity: .55; } svg .out { fill: #cf222e; fill-opacity: 1; }
svg .ci { fill-opacity: .18; } svg .noise { fill: #eaeef2; } svg .zero { stroke: #57606a; stroke-dasharray: 3 3; }
svg .lane { fill: var(--band); } svg [data-tip]:hover { stroke: #1b1f24; stroke-width: 1; }
ul.legend { display: flex; flex-wrap: wrap; gap: .2rem 1rem; padding: 0; list-style: none; font-size: .9rem; }
ul.legend span { display: inline-block; width: .8rem; height: .8rem; margin-right: .3rem; vertical-align: -1px; }
#tip { position: fixed; pointer-events: none; background: #1b1f24; color: #fff; padding: .3rem .5rem; border-radius: 4px;
       font-size: .85rem; max-width: 28rem; white-space: pre-wrap; display: none; z-index: 10; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.status-pass { color: #1a7f37; } .status-warn { color: #9a6700; } .status-fail { color: #cf222e; }
"#;

/// Hover and focus details: each element with `data-tip` shows it in one box.
const SCRIPT: &str = r#"
(function () {
  var tip = document.getElementById('tip');
  function show(e) {
    var t = e.target.closest ? e.target.closest('[data-tip]') : null;
    if (!t) { tip.style.display = 'none'; return; }
    tip.textContent = t.getAttribute('data-tip');
    tip.style.display = 'block';
    var r = t.getBoundingClientRect();
    var x = e.clientX !== undefined && e.type !== 'focusin' ? e.clientX : r.left;
    var y = e.clientY !== undefined && e.type !== 'focusin' ? e.clientY : r.bottom;
    tip.style.left = Math.min(x + 12, window.innerWidth - tip.offsetWidth - 8) + 'px';
    tip.style.top = (y + 14) + 'px';
  }
  document.addEventListener('mouseover', show);
  document.addEventListener('focusin', show);
  document.addEventListener('mouseout', function () { tip.style.display = 'none'; });
})();
"#;

pub fn document(title: &str, toc: &Markup, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(CSP);
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content=(format!("coldstart {}", env!("CARGO_PKG_VERSION")));
                title { (title) }
                style { (PreEscaped(CSS)) }
            }
            body {
                header {
                    h1 { (title) }
                    (toc)
                }
                main { (body) }
                div id="tip" role="tooltip" {}
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
}
