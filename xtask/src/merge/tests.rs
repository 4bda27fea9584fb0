//! The merge on hand-written shard files: failures, coverage across
//! shards, and every way shards can fail to cover a run exactly.

use super::model::{add_file, check, render, Merged};

fn header(shard: &str, planned: &str) -> String {
    format!(
        r#"{{"kind":"run","format":1,"test":"t","package":"p","target":"--test it","shard":"{shard}","planned":{planned},"planned_count":0,"ran":0,"stopped_by_plateau":false,"sites":[{{"kind":"sometimes","site":"odd","file":"a.rs","line":3}},{{"kind":"sometimes","site":"never","file":"a.rs","line":9}}]}}"#
    )
}

fn seed(shard: &str, seed: u64, fail: bool) -> String {
    let (outcome, class) = if fail {
        ("fail", "\"assertion\"")
    } else {
        ("pass", "null")
    };
    let held = seed % 2;
    format!(
        r#"{{"kind":"seed","test":"t","shard":"{shard}","seed":{seed},"strategy":"random","outcome":"{outcome}","class":{class},"message":"boom {seed}","fingerprint":"0x01","steps":4,"virtual_time_ns":1500000000,"replay":"SIM_SEED={seed} cargo test","coverage":[{{"site":"odd","file":"a.rs","line":3,"reached":1,"held":{held}}}]}}"#
    )
}

/// The files of `seeds` (planned 0..=5) split in `n` shards by position.
fn shards(n: u64, fail: &[u64]) -> Vec<(String, String)> {
    (1..=n)
        .map(|k| {
            let shard = format!("{k}/{n}");
            let mut text = header(&shard, "[[0,5]]") + "\n";
            for s in (0..6).filter(|s| s % n == k - 1) {
                text += &(seed(&shard, s, fail.contains(&s)) + "\n");
            }
            (format!("f{k}.jsonl"), text)
        })
        .collect()
}

fn merge(files: &[(String, String)]) -> Merged {
    let mut m = Merged::default();
    for (name, text) in files {
        add_file(&mut m, name, text).unwrap();
    }
    check(&mut m);
    m
}

#[test]
fn shards_merge_to_the_unsharded_records_and_coverage() {
    let whole = merge(&shards(1, &[3, 5]));
    let parts = merge(&shards(3, &[3, 5]));
    let (w, p) = (
        &whole.tests.values().next().unwrap(),
        &parts.tests.values().next().unwrap(),
    );
    assert_eq!(w.seeds, p.seeds);
    assert_eq!(w.failing(), [3, 5]);
    assert_eq!(p.failing(), [3, 5]);
    for (site, c) in &w.sites {
        let q = &p.sites[site];
        assert_eq!(
            (c.reached, c.held, c.seeds_held),
            (q.reached, q.held, q.seeds_held)
        );
    }
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    assert!(!parts.ok(), "failing seeds fail the merge");
    let text = render(&parts);
    assert!(text.contains("FAILED: 2 seed(s): 3, 5"), "{text}");
    assert!(text.contains("first failure: seed 3 (shard 1/3)"), "{text}");
    assert!(text.contains("replay: SIM_SEED=3 cargo test"), "{text}");
    assert!(text.contains("virtual time 1.500000000s"), "{text}");
    // "odd" held on seeds 1, 3, 5: shards 2/3 (seed 1), 1/3 (3), 3/3 (5).
    assert!(text.contains("ok: sometimes!(\"odd\") at a.rs:3: reached 6 time(s) in shards 1/3, 2/3, 3/3; held 3 time(s), in 3 seed(s), in shards 1/3, 2/3, 3/3"), "{text}");
    assert!(
        text.contains("NOT COVERED (never held): sometimes!(\"never\") at a.rs:9"),
        "{text}"
    );
}

#[test]
fn a_passing_complete_merge_is_ok() {
    let m = merge(&shards(2, &[]));
    assert!(m.ok(), "{}", render(&m));
    assert!(render(&m).contains("every seed passed"));
}

#[test]
fn a_missing_shard_is_named_with_its_rerun() {
    let mut files = shards(3, &[]);
    files.remove(1);
    let m = merge(&files);
    assert!(!m.ok());
    let text = render(&m);
    assert!(
        text.contains(
            "2 planned seed(s) never ran: 1, 4; shard 2/3 is missing: run it with SIM_SHARD=2/3"
        ),
        "{text}"
    );
}

#[test]
fn overlapping_and_mixed_splits_are_refused() {
    let mut files = shards(2, &[]);
    files.push(("again.jsonl".into(), files[0].1.clone()));
    let text = render(&merge(&files));
    assert!(
        text.contains("shard 1/2 appears twice (f1.jsonl and again.jsonl)"),
        "{text}"
    );
    assert!(
        text.contains("seed 0 ran in shard 1/2 and in shard 1/2 (overlap)"),
        "{text}"
    );
    let mut files = shards(2, &[]);
    files.extend(
        shards(3, &[])
            .into_iter()
            .map(|(n, t)| (format!("x{n}"), t)),
    );
    let text = render(&merge(&files));
    assert!(text.contains("split the seeds in 2"), "{text}");
}

#[test]
fn different_plans_and_unplanned_seeds_are_problems() {
    let mut files = shards(2, &[]);
    files[1].1 = files[1].1.replacen("[[0,5]]", "[[0,7]]", 1);
    let text = render(&merge(&files));
    assert!(text.contains("planned other seeds than f1.jsonl"), "{text}");
    let mut files = shards(1, &[]);
    files[0].1 += &(seed("1/1", 40, false) + "\n");
    let text = render(&merge(&files));
    assert!(
        text.contains("1 seed(s) ran that the run did not plan: 40"),
        "{text}"
    );
}

#[test]
fn malformed_files_name_the_file_and_line() {
    let mut m = Merged::default();
    let err = add_file(
        &mut m,
        "a.jsonl",
        &format!("{}\nnot json\n", header("1/1", "[[0,1]]")),
    )
    .unwrap_err();
    assert_eq!(err, "a.jsonl:2: not JSON");
    let err = add_file(&mut m, "b.jsonl", &seed("1/1", 0, false)).unwrap_err();
    assert!(
        err.contains("b.jsonl:1: the first line is not the \"run\" header"),
        "{err}"
    );
    let err = add_file(&mut m, "c.jsonl", "").unwrap_err();
    assert!(err.contains("empty results file"), "{err}");
}
