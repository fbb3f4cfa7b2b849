//! The layout's rules, checked on the source itself: no import cycles
//! between modules, a pure session core, and a code map that names the
//! tree.
//!
//! Every `.rs` file of a crate is read with `syn`. A file depends on
//! another when it names something there: a `use` path, or any path in its
//! code or inside a macro call (read token by token) that starts with
//! `crate::`, `super::` or `self::`, a child module or a name it imported.
//! Each path is followed down the module tree, through `use` bindings and
//! re-exports, to the file that defines the item. A module's own `mod`
//! lines and re-exports (`pub use`, `pub(super) use`) of its own
//! descendants are its structure, not a dependency; code under
//! `#[cfg(test)]` is left out (tests may look anywhere). Paths written
//! inside string attributes are not seen (there are none).
//!
//! Checked, each with a positive control:
//! - no cycle between files, nor between the top-level modules of
//!   `agentbus-engine` (`session`, `store`, `bus`, ...) or of the binary,
//!   and no glob import outside tests (it would hide where a name comes
//!   from);
//! - `session::core` depends on nothing but itself, `protocol`, `model`,
//!   `text`, `tokens`, `permissions` and `images` (the last two held to
//!   the same rule), and names no crate but `std`, `serde`, `serde_json`,
//!   `chrono` and the rule matcher's pure parsers — no I/O (`std::fs`,
//!   `std::io`, `std::net`, ...), no clock, no printing macro, no new
//!   session ids;
//! - the core's transition function is one entry (`step`) over small
//!   phase files whose functions are methods of the one value carrying the
//!   state and the effects, none with more than five parameters;
//! - the library has one door to a session: `SessionDoor`'s verbs
//!   (submit, interrupt, decide) are no other type's public methods;
//! - ARCHITECTURE.md names every folder and top-level file of each crate
//!   in that crate's section;
//! - a comment points only at documents the tree holds: no design
//!   document kept elsewhere, no issue number, every `docs/*.md` it names
//!   there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// A module path inside a crate, `[]` being the crate root.
type ModPath = Vec<String>;

/// What a crate is made of: each module's file, the names it re-exports,
/// and the paths its code names.
struct Crate {
    files: BTreeMap<ModPath, PathBuf>,
    /// `use` bindings: module -> name -> the path it stands for.
    exports: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    /// Module -> the absolute paths its code names (outside its structure).
    uses: BTreeMap<ModPath, Vec<ModPath>>,
    /// Module -> the paths naming other crates, in full.
    externs: BTreeMap<ModPath, BTreeSet<String>>,
    /// Module -> the macros it calls.
    macros: BTreeMap<ModPath, BTreeSet<String>>,
    /// Module -> its glob imports (a glob hides which file a name comes
    /// from, so outside tests there are none).
    globs: BTreeMap<ModPath, Vec<String>>,
}

fn module_path(root: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(root).expect("file under the crate root");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    match last.as_str() {
        "lib.rs" | "main.rs" | "mod.rs" if parts.is_empty() || last == "mod.rs" => {}
        _ => parts.push(last.trim_end_matches(".rs").to_string()),
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read source dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// A path of the use tree, flattened: (segments, the name it binds, glob).
fn flatten(tree: &syn::UseTree, prefix: &mut ModPath, out: &mut Vec<(ModPath, String, bool)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix.clone();
            if name != "self" {
                path.push(name.clone());
            }
            let bound = path.last().cloned().unwrap_or_default();
            out.push((path, bound, false));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((path, r.rename.to_string(), false));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), String::new(), true)),
        syn::UseTree::Group(g) => {
            for item in &g.items {
                flatten(item, prefix, out);
            }
        }
    }
}

/// Collects what one file names.
struct FileVisitor {
    module: ModPath,
    /// Names imported by `use` in this file -> absolute path.
    imports: BTreeMap<String, ModPath>,
    /// Names imported from other crates -> their full path.
    extern_imports: BTreeMap<String, Vec<String>>,
    uses: Vec<ModPath>,
    exports: BTreeMap<String, ModPath>,
    /// Paths into other crates, in full (`std::fs::read`, `tokio::spawn`).
    externs: BTreeSet<String>,
    child_modules: BTreeSet<String>,
    /// Children declared `#[cfg(test)] mod x;`.
    test_children: BTreeSet<String>,
    /// The names of the macros it calls (`println`, `json`, ...).
    macros: BTreeSet<String>,
    /// Its `use ...::*` imports (outside tests).
    globs: Vec<String>,
}

impl FileVisitor {
    /// `path` (as written in this file) made absolute, or `None` for a path
    /// into another crate (recorded in `externs`) or a local name.
    fn absolute(&mut self, segments: &[String]) -> Option<ModPath> {
        let first = segments.first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.module.clone(),
            "super" => {
                let mut m = self.module.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    m.pop();
                    rest = &rest[1..];
                }
                m.extend(rest.iter().cloned());
                return Some(m);
            }
            name if self.imports.contains_key(name) => {
                let mut m = self.imports[name].clone();
                m.extend(segments[1..].iter().cloned());
                return Some(m);
            }
            name if self.child_modules.contains(name) => {
                let mut m = self.module.clone();
                m.extend(segments.iter().cloned());
                return Some(m);
            }
            name if self.extern_imports.contains_key(name) => {
                let mut full = self.extern_imports[name].clone();
                full.extend(segments[1..].iter().cloned());
                self.externs.insert(full.join("::"));
                return None;
            }
            name => {
                // `tokio::spawn`, `std::fs::read`: another crate. (Prelude
                // and generic names — `Vec::new`, `T::default` — start
                // with a capital.)
                const PRIMITIVES: [&str; 17] = [
                    "bool", "char", "str", "f32", "f64", "i8", "i16", "i32", "i64", "i128",
                    "isize", "u8", "u16", "u32", "u64", "u128", "usize",
                ];
                if segments.len() > 1
                    && name.starts_with(|c: char| c.is_lowercase())
                    && !PRIMITIVES.contains(&name)
                {
                    self.externs.insert(segments.join("::"));
                }
                return None;
            }
        };
        base.extend(segments[1..].iter().cloned());
        Some(base)
    }

    fn use_item(&mut self, item: &syn::ItemUse) {
        let mut flat = Vec::new();
        flatten(&item.tree, &mut Vec::new(), &mut flat);
        // Re-exported (`pub`, `pub(super)`, ...), not only imported.
        let public = !matches!(item.vis, syn::Visibility::Inherited);
        for (path, bound, glob) in flat {
            if glob {
                self.globs.push(format!("{}::*", path.join("::")));
            }
            let Some(absolute) = self.absolute(&path) else {
                if !glob {
                    self.extern_imports.insert(bound, path);
                }
                continue;
            };
            // A module's re-export of its own descendants is its structure.
            let own = absolute.starts_with(&self.module) && absolute.len() > self.module.len();
            // Any `use` binds the name in this module (a private one for
            // its descendants): resolution follows it.
            if !glob {
                self.exports.insert(bound.clone(), absolute.clone());
            }
            if !glob {
                self.imports.insert(bound, absolute.clone());
            }
            if !(public && own) {
                self.uses.push(absolute);
            }
        }
    }
}

impl<'ast> Visit<'ast> for FileVisitor {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(_) => return syn::visit::visit_item(self, item),
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Const(c) => &c.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test_only(attrs) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // `mod x;` is structure; an inline `mod x { .. }` is read as part
        // of this file.
        if is_test_only(&m.attrs) {
            self.test_children.insert(m.ident.to_string());
            return;
        }
        if let Some((_, items)) = &m.content {
            for item in items {
                self.visit_item(item);
            }
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_item(item);
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(super)` names a module but uses nothing.
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(absolute) = self.absolute(&segments) {
            self.uses.push(absolute);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Paths inside macro calls (`tracing::warn!(x = %a::b(..))`,
        // `json!({..})`, `tokio::select!`, ...): every `a::b::c` run of the
        // tokens, whatever the macro's own syntax.
        if let Some(name) = mac.path.segments.last() {
            self.macros.insert(name.ident.to_string());
        }
        let mut paths = Vec::new();
        token_paths(mac.tokens.clone(), &mut paths);
        for segments in paths {
            if let Some(absolute) = self.absolute(&segments) {
                self.uses.push(absolute);
            }
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// Every `a::b::c` run of identifiers in a token stream (groups included).
fn token_paths(tokens: proc_macro2::TokenStream, out: &mut Vec<Vec<String>>) {
    use proc_macro2::TokenTree;
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        match &trees[i] {
            TokenTree::Group(g) => token_paths(g.stream(), out),
            TokenTree::Ident(ident) => {
                let mut path = vec![ident.to_string()];
                let mut j = i + 1;
                // `::` is two `:` puncts, then an identifier.
                while let (
                    Some(TokenTree::Punct(a)),
                    Some(TokenTree::Punct(b)),
                    Some(TokenTree::Ident(next)),
                ) = (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                {
                    if a.as_char() != ':' || b.as_char() != ':' {
                        break;
                    }
                    path.push(next.to_string());
                    j += 3;
                }
                if path.len() > 1 {
                    out.push(path);
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

fn read_crate(root: &Path) -> Crate {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let modules: BTreeMap<ModPath, PathBuf> = files
        .iter()
        .map(|f| (module_path(root, f), f.clone()))
        .collect();
    let mut krate = Crate {
        files: BTreeMap::new(),
        exports: BTreeMap::new(),
        uses: BTreeMap::new(),
        externs: BTreeMap::new(),
        macros: BTreeMap::new(),
        globs: BTreeMap::new(),
    };
    // Files of test-only modules (and everything under them) are left out.
    let mut test_only: BTreeSet<ModPath> = BTreeSet::new();
    for (module, file) in &modules {
        if test_only.iter().any(|t| module.starts_with(t)) {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read source");
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        let child_modules = modules
            .keys()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
            .map(|m| m.last().cloned().unwrap_or_default())
            .collect();
        let mut visitor = FileVisitor {
            module: module.clone(),
            imports: BTreeMap::new(),
            extern_imports: BTreeMap::new(),
            uses: Vec::new(),
            exports: BTreeMap::new(),
            externs: BTreeSet::new(),
            child_modules,
            test_children: BTreeSet::new(),
            macros: BTreeSet::new(),
            globs: Vec::new(),
        };
        // Imports first, so paths through imported names resolve wherever
        // they appear in the file.
        for item in &parsed.items {
            if let syn::Item::Use(u) = item
                && !is_test_only(&u.attrs)
            {
                visitor.use_item(u);
            }
        }
        visitor.uses.clear();
        visitor.externs.clear();
        visitor.globs.clear();
        visitor.visit_file(&parsed);
        for child in &visitor.test_children {
            let mut path = module.clone();
            path.push(child.clone());
            test_only.insert(path);
        }
        krate.files.insert(module.clone(), file.clone());
        krate.exports.insert(module.clone(), visitor.exports);
        krate.uses.insert(module.clone(), visitor.uses);
        krate.externs.insert(module.clone(), visitor.externs);
        krate.macros.insert(module.clone(), visitor.macros);
        krate.globs.insert(module.clone(), visitor.globs);
    }
    krate
}

impl Crate {
    /// The file that defines what `path` names: down the module tree,
    /// through re-exports.
    fn defining_module(&self, path: &[String], depth: usize) -> ModPath {
        let mut module: ModPath = Vec::new();
        for (i, segment) in path.iter().enumerate() {
            let mut child = module.clone();
            child.push(segment.clone());
            if self.files.contains_key(&child) {
                module = child;
                continue;
            }
            if depth < 16
                && let Some(target) = self.exports.get(&module).and_then(|e| e.get(segment))
            {
                let mut rest = target.clone();
                rest.extend(path[i + 1..].iter().cloned());
                return self.defining_module(&rest, depth + 1);
            }
            break;
        }
        module
    }

    /// File-level edges: module -> the modules it depends on.
    fn edges(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
        for (module, uses) in &self.uses {
            let targets = edges.entry(module.clone()).or_default();
            for path in uses {
                let target = self.defining_module(path, 0);
                if &target != module {
                    targets.insert(target);
                }
            }
        }
        edges
    }
}

/// The cycles of a graph: its strongly connected components with more than
/// one node (Tarjan).
fn cycles<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct State<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        next: usize,
        found: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(n: &N, edges: &BTreeMap<N, BTreeSet<N>>, s: &mut State<N>) {
        s.index.insert(n.clone(), s.next);
        s.low.insert(n.clone(), s.next);
        s.next += 1;
        s.stack.push(n.clone());
        s.on_stack.insert(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            if !s.index.contains_key(m) {
                visit(m, edges, s);
                let low = s.low[n].min(s.low[m]);
                s.low.insert(n.clone(), low);
            } else if s.on_stack.contains(m) {
                let low = s.low[n].min(s.index[m]);
                s.low.insert(n.clone(), low);
            }
        }
        if s.low[n] == s.index[n] {
            let mut component = Vec::new();
            while let Some(m) = s.stack.pop() {
                s.on_stack.remove(&m);
                let done = &m == n;
                component.push(m);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for n in edges.keys() {
        if !state.index.contains_key(n) {
            visit(n, edges, &mut state);
        }
    }
    state.found
}

fn name(module: &ModPath) -> String {
    if module.is_empty() {
        "crate".into()
    } else {
        module.join("::")
    }
}

fn top_level(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in edges {
        let Some(a) = from.first() else { continue };
        for to in targets {
            if let Some(b) = to.first().filter(|b| *b != a) {
                top.entry(a.clone()).or_default().insert(b.clone());
            }
        }
    }
    top
}

fn assert_no_cycles(krate_name: &str, root: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let krate = read_crate(root);
    let globs: Vec<String> = krate
        .globs
        .iter()
        .flat_map(|(m, g)| g.iter().map(move |g| format!("{}: use {g}", name(m))))
        .collect();
    assert!(
        globs.is_empty(),
        "{krate_name}: glob imports outside tests hide where names come from: {globs:?}"
    );
    let edges = krate.edges();
    let file_cycles: Vec<String> = cycles(&edges)
        .iter()
        .map(|c| c.iter().map(name).collect::<Vec<_>>().join(" <-> "))
        .collect();
    assert!(
        file_cycles.is_empty(),
        "{krate_name}: import cycles between files: {file_cycles:#?}"
    );
    let top = top_level(&edges);
    let top_cycles = cycles(&top);
    assert!(
        top_cycles.is_empty(),
        "{krate_name}: import cycles between top-level modules: {top_cycles:?}\nedges: {top:#?}"
    );
    edges
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_actors_crate_has_no_import_cycle() {
    let edges = assert_no_cycles("agentbus-engine", &workspace().join("actors/src"));
    // The checker sees real dependencies (it would miss every cycle if it
    // saw none): the AgentLoop uses the core's step, the session commands
    // use the stored sessions, the store's SQLite backend the store trait.
    let of = |m: &str| -> ModPath { m.split("::").map(String::from).collect() };
    let depends = |a: &str, b: &str| edges.get(&of(a)).is_some_and(|t| t.contains(&of(b)));
    assert!(depends("session::actor", "session::core::step"));
    assert!(depends("sessions::store_commands", "sessions::stored"));
    assert!(depends("store::sqlite", "store::backend"));
}

#[test]
fn the_binary_has_no_import_cycle() {
    let edges = assert_no_cycles("agentbus", &workspace().join("src"));
    let of = |m: &str| -> ModPath { m.split("::").map(String::from).collect() };
    let depends = |a: &str, b: &str| edges.get(&of(a)).is_some_and(|t| t.contains(&of(b)));
    assert!(
        depends("serve::sessions", "serve::state"),
        "the checker sees the binary's edges"
    );
    assert!(depends("frontend::run", "frontend::output::answer"));
}

/// What makes the modules under `prefix` impure: dependencies outside the
/// session core, `protocol`, `model`, `text`, `tokens` (counting is a
/// pure computation), `permissions` (the rule matcher) and `images` (told
/// by their bytes), and names of I/O, clock, randomness or actor crates.
fn impurities(
    krate: &Crate,
    edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
    prefix: &ModPath,
) -> Vec<String> {
    let core: ModPath = vec!["session".into(), "core".into()];
    let allowed = |m: &ModPath| {
        m.starts_with(&core)
            || m.first().is_some_and(|f| {
                [
                    "protocol",
                    "model",
                    "text",
                    "tokens",
                    "permissions",
                    "images",
                ]
                .contains(&f.as_str())
            })
    };
    // Other crates the core may name: plain data and pure helpers (the
    // rule matcher's shell parser and globs among them).
    let pure_crates = [
        "std",
        "core",
        "alloc",
        "serde",
        "serde_json",
        "chrono",
        "thiserror",
        "brush_parser",
        // `brush_parser::ast`, imported by that name in `permissions::shell`.
        "ast",
        "stacker",
        "globset",
        // `images` encodes what it reads as base64.
        "base64",
        // Hook matchers that are regular expressions (`session::core::hooks`).
        "regex",
        // `permissions::domain` reads a `web_fetch` call's host with the
        // parser the tool fetches with (parsing only).
        "url",
    ];
    let impure_std = [
        "std::fs",
        "std::io",
        "std::net",
        "std::process",
        "std::env",
        "std::thread",
        "std::time::SystemTime",
        "std::time::Instant",
        "chrono::Utc::now",
        "chrono::Local",
    ];
    let impure_macros = ["print", "println", "eprint", "eprintln", "dbg"];
    let mut problems = Vec::new();
    for (module, targets) in edges.iter().filter(|(m, _)| m.starts_with(prefix)) {
        for target in targets.iter().filter(|t| !allowed(t)) {
            problems.push(format!("{} uses {}", name(module), name(target)));
        }
        for path in &krate.externs[module] {
            let first = path.split("::").next().unwrap_or_default();
            let impure = impure_std.iter().any(|p| path.starts_with(p));
            if impure || !pure_crates.contains(&first) {
                problems.push(format!("{} names {path}", name(module)));
            }
        }
        for mac in &krate.macros[module] {
            if impure_macros.contains(&mac.as_str()) {
                problems.push(format!("{} prints ({mac}!)", name(module)));
            }
        }
        for path in &krate.uses[module] {
            let tail: Vec<&str> = path.iter().rev().take(2).map(String::as_str).collect();
            if tail == ["new", "SessionId"] || tail == ["default", "SessionId"] {
                problems.push(format!(
                    "{} makes session ids (clock and randomness)",
                    name(module)
                ));
            }
        }
    }
    problems
}

#[test]
fn the_session_core_is_pure() {
    let root = workspace().join("actors/src");
    let krate = read_crate(&root);
    let edges = krate.edges();
    let core: ModPath = vec!["session".into(), "core".into()];
    let problems = impurities(&krate, &edges, &core);
    assert!(
        problems.is_empty(),
        "the session core must do no I/O: {problems:#?}"
    );
    // The rule matcher the core consults is held to the same standard.
    let permissions: ModPath = vec!["permissions".into()];
    let problems = impurities(&krate, &edges, &permissions);
    assert!(
        problems.is_empty(),
        "the permission rules must do no I/O: {problems:#?}"
    );
    // So is what tells an image by its bytes.
    let images: ModPath = vec!["images".into()];
    let problems = impurities(&krate, &edges, &images);
    assert!(
        problems.is_empty(),
        "the image checks must do no I/O: {problems:#?}"
    );
    // The check sees what it must refuse: the AgentLoop, beside the core,
    // names tokio and kameo and uses the store.
    let actor: ModPath = vec!["session".into(), "actor".into()];
    let refused = impurities(&krate, &edges, &actor).join("\n");
    for expected in ["names tokio", "names kameo", "uses store"] {
        assert!(
            refused.contains(expected),
            "the AgentLoop {expected}? {refused}"
        );
    }
    assert!(
        edges.keys().filter(|m| m.starts_with(&core)).count() > 10,
        "the core's files were all found"
    );
}

/// The longest a file of the core's transition function may be.
const MAX_PHASE_LINES: usize = 350;

/// What in one file of `session/core/step/` (`text`, named `file`) breaks
/// the shape of the transition function: one entry, `step`, in `mod.rs`;
/// every phase a small file whose functions take the one value that carries
/// the state and the effects (`Step`) rather than threading them as
/// parameters; no function with more than five parameters.
fn phase_problems(file: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let lines = text.lines().count();
    if lines > MAX_PHASE_LINES {
        problems.push(format!(
            "{file} has {lines} lines (at most {MAX_PHASE_LINES}: split the phase)"
        ));
    }
    if text.contains("too_many_arguments") {
        problems.push(format!("{file} allows clippy::too_many_arguments"));
    }
    let parsed = match syn::parse_file(text) {
        Ok(parsed) => parsed,
        Err(e) => return vec![format!("{file} does not parse: {e}")],
    };
    let mut functions: Vec<(String, &syn::Signature)> = Vec::new();
    for item in &parsed.items {
        match item {
            syn::Item::Fn(f) => {
                let public = matches!(f.vis, syn::Visibility::Public(_));
                if file == "mod.rs" && public && f.sig.ident != "step" {
                    problems.push(format!(
                        "{file}: `{}` is public (the one entry is `step`)",
                        f.sig.ident
                    ));
                }
                functions.push((f.sig.ident.to_string(), &f.sig));
            }
            syn::Item::Impl(i) if !is_test_only(&i.attrs) => {
                for item in &i.items {
                    if let syn::ImplItem::Fn(f) = item {
                        functions.push((f.sig.ident.to_string(), &f.sig));
                    }
                }
            }
            _ => {}
        }
    }
    for (name, sig) in functions {
        let typed: Vec<String> = sig
            .inputs
            .iter()
            .filter_map(|input| match input {
                syn::FnArg::Typed(t) => Some(type_text(&t.ty)),
                syn::FnArg::Receiver(_) => None,
            })
            .collect();
        if typed.len() > 5 {
            problems.push(format!("{file}: `{name}` takes {} parameters", typed.len()));
        }
        let threads = typed
            .iter()
            .any(|ty| ty == "&mutSessionState" || ty == "&mutVec<Effect>");
        if threads && name != "step" {
            problems.push(format!(
                "{file}: `{name}` threads the state or the effects as a parameter (make it a method of `Step`)"
            ));
        }
    }
    problems
}

/// A parameter's type as written, without spaces, for the forms
/// `phase_problems` looks for (`&mut SessionState`, `&mut Vec<Effect>`);
/// any other form reads as `_`.
fn type_text(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Reference(r) => {
            let mutable = if r.mutability.is_some() { "mut" } else { "" };
            format!("&{mutable}{}", type_text(&r.elem))
        }
        syn::Type::Path(p) => p
            .path
            .segments
            .iter()
            .map(|s| match &s.arguments {
                syn::PathArguments::AngleBracketed(args) => {
                    let inner: Vec<String> = args
                        .args
                        .iter()
                        .map(|a| match a {
                            syn::GenericArgument::Type(t) => type_text(t),
                            _ => "_".to_string(),
                        })
                        .collect();
                    format!("{}<{}>", s.ident, inner.join(","))
                }
                _ => s.ident.to_string(),
            })
            .collect::<Vec<_>>()
            .join("::"),
        _ => "_".to_string(),
    }
}

#[test]
fn the_session_core_steps_in_small_phases() {
    // The check finds what it must.
    let sample = "pub fn step() {}\npub fn other() {}\n\
                  #[allow(clippy::too_many_arguments)]\n\
                  fn run(state: &mut SessionState, a: u8, b: u8, c: u8, d: u8, fx: &mut Vec<Effect>) {}\n";
    let found = phase_problems("mod.rs", sample);
    assert_eq!(
        found,
        [
            "mod.rs allows clippy::too_many_arguments",
            "mod.rs: `other` is public (the one entry is `step`)",
            "mod.rs: `run` takes 6 parameters",
            "mod.rs: `run` threads the state or the effects as a parameter (make it a method of `Step`)",
        ]
    );
    let long = "// a line\n".repeat(MAX_PHASE_LINES + 1);
    assert_eq!(phase_problems("queue.rs", &long).len(), 1);

    let mut files = Vec::new();
    rust_files(
        &workspace().join("actors/src/session/core/step"),
        &mut files,
    );
    assert!(files.len() > 5, "the phases were found: {files:?}");
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        problems.extend(phase_problems(&name, &text));
    }
    assert!(
        problems.is_empty(),
        "the transition function's shape: {problems:#?}"
    );
}

/// The verbs of a session's door: a public method by one of these names
/// (or a public `decide` taking an `ApprovalDecision`) outside
/// `session/door.rs` is another door.
const DOOR_VERBS: [&str; 5] = [
    "submit",
    "submit_text",
    "submit_query",
    "submit_control",
    "interrupt",
];

/// The public methods of `text` (one file, named `file`) that send a
/// session an input by another way than the one door.
fn other_doors(file: &str, text: &str) -> Vec<String> {
    let Ok(parsed) = syn::parse_file(text) else {
        return vec![format!("{file} does not parse")];
    };
    let mut found = Vec::new();
    for item in &parsed.items {
        let syn::Item::Impl(block) = item else {
            continue;
        };
        if is_test_only(&block.attrs) || block.trait_.is_some() {
            continue;
        }
        for item in &block.items {
            let syn::ImplItem::Fn(f) = item else { continue };
            if !matches!(f.vis, syn::Visibility::Public(_)) || is_test_only(&f.attrs) {
                continue;
            }
            let name = f.sig.ident.to_string();
            let decides = name == "decide"
                && f.sig.inputs.iter().any(|input| {
                    matches!(input, syn::FnArg::Typed(t) if type_text(&t.ty).ends_with("ApprovalDecision"))
                });
            if DOOR_VERBS.contains(&name.as_str()) || decides {
                found.push(format!("{file}: pub fn {name}"));
            }
        }
    }
    found
}

#[test]
fn a_session_has_one_door() {
    // The check finds what it must.
    let sample = "impl Handle {\n\
                  pub async fn interrupt(&self) {}\n\
                  pub async fn decide(&self, id: &str, d: ApprovalDecision) {}\n\
                  pub fn decide_route(&self) {}\n\
                  pub(crate) async fn submit(&self) {}\n}\n";
    assert_eq!(
        other_doors("handle.rs", sample),
        ["handle.rs: pub fn interrupt", "handle.rs: pub fn decide"]
    );
    let mut files = Vec::new();
    rust_files(&workspace().join("actors/src"), &mut files);
    let mut found = Vec::new();
    for file in &files {
        if file.ends_with("session/door.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read source");
        let name = file
            .strip_prefix(workspace())
            .unwrap_or(file)
            .display()
            .to_string();
        found.extend(other_doors(&name, &text));
    }
    assert!(
        found.is_empty(),
        "a session is reached through `SessionDoor` alone (send, and the calls made of it): {found:#?}"
    );
}

/// Debugging aid: `LAYOUT_ROOT=DIR [LAYOUT_MODULE=a::b] cargo test --test
/// all layout::print_layout -- --ignored --nocapture` prints the cycles of any
/// crate's source (e.g. an older checkout) and the edges of one module.
#[test]
#[ignore = "a debugging aid, not a check: see its doc comment"]
fn print_layout() {
    let root = std::env::var("LAYOUT_ROOT").map_or(workspace().join("actors/src"), PathBuf::from);
    let krate = read_crate(&root);
    let edges = krate.edges();
    for cycle in cycles(&edges) {
        println!(
            "file cycle: {}",
            cycle.iter().map(name).collect::<Vec<_>>().join(" <-> ")
        );
    }
    let top = top_level(&edges);
    for cycle in cycles(&top) {
        println!("top-level cycle: {}", cycle.join(" <-> "));
    }
    for (module, targets) in &top {
        println!(
            "{module} -> {}",
            targets.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let wanted = std::env::var("LAYOUT_MODULE").unwrap_or_default();
    for (module, targets) in edges.iter().filter(|(m, _)| name(m) == wanted) {
        for target in targets {
            println!("{} -> {}", name(module), name(target));
        }
    }
}

/// ARCHITECTURE.md's code map names every folder of both crates and every
/// file at the top of each (`model.rs`, `api.rs`, ...), each in its own
/// crate's section, so it cannot fall behind the tree.
#[test]
fn the_architecture_map_names_every_folder() {
    let map = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("read map");
    // The map's sections, by their `### ` headings.
    let section = |heading: &str| -> String {
        let start = map
            .find(&format!("### {heading}"))
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section `### {heading}`"));
        let rest = &map[start + 4..];
        rest[..rest.find("\n#").unwrap_or(rest.len())].to_string()
    };
    let mut missing = Vec::new();
    for (root, heading) in [("actors/src", "`actors/`"), ("src", "`src/`")] {
        let text = section(heading);
        let root = workspace().join(root);
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        let mut named: BTreeSet<String> = BTreeSet::new();
        for file in &files {
            let relative = file.strip_prefix(&root).expect("under root");
            for part in relative.parent().into_iter().flat_map(|p| p.iter()) {
                named.insert(format!("`{}/", part.to_string_lossy()));
            }
            if relative.parent().is_some_and(|p| p.as_os_str().is_empty()) {
                let name = relative.to_string_lossy();
                if !["lib.rs", "main.rs"].contains(&name.as_ref()) {
                    named.insert(format!("`{name}`"));
                }
            }
        }
        missing.extend(
            named
                .into_iter()
                .filter(|n| !text.contains(n.as_str()))
                .map(|n| format!("{heading}: {n}")),
        );
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name: {missing:?}"
    );
}

#[test]
fn paths_inside_macro_calls_are_seen() {
    let tokens: proc_macro2::TokenStream =
        r#"x = %crate::a::b(1), { "k": super::c::D }, tokio::select! { _ = e::f => {} }"#
            .parse()
            .expect("tokens");
    let mut paths = Vec::new();
    token_paths(tokens, &mut paths);
    let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        ["crate::a::b", "super::c::D", "tokio::select", "e::f"]
    );
}

/// What in `text` (a file's lines) points at a document the tree does not
/// hold: a design document kept outside it (the `DESIGN` files of the
/// team's shared folder), an issue by its number, or a page of `docs/`
/// that `exists` says is not there.
fn stale_references(text: &str, exists: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let Some(comment) = line.find("//").map(|at| &line[at..]) else {
            continue;
        };
        let lower = comment.to_lowercase();
        let issue = lower.match_indices("issue ").any(|(at, word)| {
            lower[at + word.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        });
        let design =
            lower.contains("design-") || lower.contains("design.md") || lower.contains("design §");
        let missing_doc = comment.match_indices("docs/").any(|(at, _)| {
            let name: String = comment[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "/_-.".contains(*c))
                .collect();
            let name = name.trim_end_matches('.');
            name.ends_with(".md") && !exists(name)
        });
        if issue || design || missing_doc {
            found.push(format!("{}: {}", number + 1, line.trim()));
        }
    }
    found
}

#[test]
fn comments_point_only_at_documents_the_tree_holds() {
    // The check finds what it must (and passes what it must).
    // (Its comment marker is put together, so that this file's own lines
    // hold none of it.)
    let c = "/".repeat(2);
    let sample = [
        format!("{c} see DESIGN-cluster.md §6.3"),
        format!("{c} (DESIGN §6.3)"),
        format!("{c} (Issue 16)"),
        format!("let x = 1; {c} docs/nowhere.md."),
        format!("{c} docs/cluster.md, \"Subjects\"; an issue with the lease"),
        "let issue = \"issue 5\";".to_string(),
    ]
    .join("\n");
    let exists = |name: &str| workspace().join(name).is_file();
    assert_eq!(
        stale_references(&sample, exists),
        [
            format!("1: {c} see DESIGN-cluster.md §6.3"),
            format!("2: {c} (DESIGN §6.3)"),
            format!("3: {c} (Issue 16)"),
            format!("4: let x = 1; {c} docs/nowhere.md."),
        ]
    );
    let mut stale = Vec::new();
    for root in ["actors/src", "actors/tests", "src", "tests", "benches"] {
        let mut files = Vec::new();
        rust_files(&workspace().join(root), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("read source");
            let relative = file
                .strip_prefix(workspace())
                .unwrap_or(&file)
                .display()
                .to_string();
            stale.extend(
                stale_references(&text, exists)
                    .into_iter()
                    .map(|line| format!("{relative}:{line}")),
            );
        }
    }
    assert!(
        stale.is_empty(),
        "comments point at documents the tree does not hold (docs/cluster.md, the README \
         or docs/faults.md may say it):\n{}",
        stale.join("\n")
    );
}
