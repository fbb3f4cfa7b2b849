//! The example scripts and fixtures shipped in `tests/fixtures` stay loadable
//! (a broken example would only fail in some other crate's test).

use agentbus_testkit::{Script, fixtures_dir};

#[test]
fn fixtures_dir_is_the_repository_fixtures() {
    let dir = fixtures_dir();
    assert!(dir.is_absolute());
    assert!(dir.ends_with("tests/fixtures"), "{}", dir.display());
    assert!(dir.join("openai/garbage.sse").is_file());
}

#[test]
fn every_example_script_loads() {
    let mut loaded = 0;
    for entry in std::fs::read_dir(fixtures_dir().join("scripts")).expect("scripts dir") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            Script::from_file(&path).unwrap_or_else(|error| panic!("{error:#}"));
            loaded += 1;
        }
    }
    assert!(loaded >= 2, "expected example scripts, found {loaded}");
}
