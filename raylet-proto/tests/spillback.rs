//! The spillback policy's table-driven cases: every `*.cases` file under
//! `tests/spillback/` holds cluster views and requests with the decision each must give.

use std::path::Path;

use ares_common::{NodeId, ResourceSet, Strategy};
use ares_raylet_proto::spillback::{Decision, NodeView, Params, decide};

/// Node names map to IDs that sort like the names.
fn node(name: &str) -> NodeId {
    let mut b = [0u8; 16];
    for (d, s) in b.iter_mut().zip(name.bytes()) {
        *d = s;
    }
    NodeId(b)
}

fn name(id: NodeId) -> String {
    String::from_utf8(id.0.iter().copied().take_while(|b| *b != 0).collect()).unwrap()
}

fn amount(s: &str) -> f64 {
    s.parse().unwrap_or_else(|_| panic!("bad amount {s:?}"))
}

struct Case {
    title: String,
    local: Option<NodeId>,
    view: Vec<NodeView>,
    request: ResourceSet,
    strategy: Strategy,
    spilled: bool,
    pick: u64,
    expect: Option<String>,
}

impl Case {
    fn new(title: &str) -> Case {
        Case {
            title: title.to_string(),
            local: None,
            view: Vec::new(),
            request: ResourceSet::new(),
            strategy: Strategy::Default,
            spilled: false,
            pick: 0,
            expect: None,
        }
    }

    fn line(&mut self, line: &str) {
        let mut words = line.split_whitespace();
        match words.next().unwrap() {
            "local:" => self.local = Some(node(words.next().unwrap())),
            "node" => {
                let id = node(words.next().unwrap());
                let mut n = NodeView { id, alive: true, total: ResourceSet::new(), available: ResourceSet::new() };
                n.total.set(&id.resource_name(), 1.0);
                n.available.set(&id.resource_name(), 1.0);
                for w in words {
                    if w == "dead" {
                        n.alive = false;
                        continue;
                    }
                    let (res, amounts) = w.split_once('=').unwrap();
                    let (avail, total) = amounts.split_once('/').unwrap();
                    n.available.set(res, amount(avail));
                    n.total.set(res, amount(total));
                }
                self.view.push(n);
            }
            "request" => {
                for w in words {
                    let (res, a) = w.split_once('=').unwrap();
                    self.request.set(res, amount(a));
                }
            }
            "strategy:" => {
                self.strategy = match (words.next(), words.next(), words.next()) {
                    (Some("default"), None, None) => Strategy::Default,
                    (Some("spread"), None, None) => Strategy::Spread,
                    (Some("affinity"), Some(n), Some(kind)) => {
                        Strategy::NodeAffinity { node: node(n), soft: kind == "soft" }
                    }
                    other => panic!("bad strategy {other:?}"),
                }
            }
            "spilled" => self.spilled = true,
            "pick:" => self.pick = words.next().unwrap().parse().unwrap(),
            "expect:" => self.expect = Some(words.collect::<Vec<_>>().join(" ")),
            other => panic!("unknown line {other:?} in case {:?}", self.title),
        }
    }

    fn check(&self) -> Result<(), String> {
        let local = self.local.ok_or("no `local:` line")?;
        let expect = self.expect.as_deref().ok_or("no `expect:` line")?;
        let got = decide(&self.view, local, &self.request, &self.strategy, &Params::default(), self.spilled, self.pick);
        let got = match got {
            Decision::Local => "local".to_string(),
            Decision::Spill(n) => format!("spill {}", name(n)),
            Decision::Infeasible => "infeasible".to_string(),
        };
        if got == expect { Ok(()) } else { Err(format!("expected `{expect}`, got `{got}`")) }
    }
}

fn cases(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<Case> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if let Some(title) = line.strip_prefix("case:") {
            out.push(Case::new(title.trim()));
        } else {
            out.last_mut().expect("a `case:` line comes first").line(line);
        }
    }
    out
}

#[test]
fn every_table_driven_case_gives_its_decision() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spillback");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut failures = Vec::new();
    let mut n = 0;
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "cases")) {
        for c in cases(f) {
            n += 1;
            if let Err(e) = c.check() {
                failures.push(format!("{}: {}: {e}", f.file_name().unwrap().to_string_lossy(), c.title));
            }
        }
    }
    assert!(n >= 20, "only {n} cases found in {}", dir.display());
    assert!(failures.is_empty(), "{} of {n} cases failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn locality_prefers_the_node_with_most_argument_bytes() {
    use ares_raylet_proto::spillback::preferred_node;
    assert_eq!(preferred_node([]), None);
    let (a, b) = (node("a"), node("b"));
    assert_eq!(preferred_node([(a, 10), (b, 6), (b, 6)]), Some(b));
    assert_eq!(preferred_node([(a, 10), (b, 10)]), Some(a), "ties go to the lowest ID");
}
