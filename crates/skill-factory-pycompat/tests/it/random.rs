//! `Random` against outputs recorded from CPython 3.11 (`data/generate.py`).

use serde_json::Value;
use skill_factory_pycompat::random::Random;

fn cases() -> Vec<Value> {
    let text = include_str!("../data/random_cpython.json");
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(cases)) => cases,
        other => panic!("data/random_cpython.json is not an array of cases: {other:?}"),
    }
}

fn seed(case: &Value) -> u64 {
    case["seed"].as_u64().expect("seed")
}

fn pairs(case: &Value, key: &str) -> Vec<(u64, u64)> {
    case[key]
        .as_array()
        .expect("array of pairs")
        .iter()
        .map(|pair| {
            (
                pair[0].as_u64().expect("u64"),
                pair[1].as_u64().expect("u64"),
            )
        })
        .collect()
}

fn numbers(value: &Value) -> Vec<usize> {
    value
        .as_array()
        .expect("array of numbers")
        .iter()
        .map(|n| n.as_u64().expect("u64") as usize)
        .collect()
}

#[test]
fn data_covers_the_seeds_the_spec_names() {
    let seeds: Vec<u64> = cases().iter().map(seed).collect();
    for wanted in [0, 1, 7, 42, (1 << 32) + 5, u64::MAX] {
        assert!(seeds.contains(&wanted), "no case for seed {wanted}");
    }
}

#[test]
fn raw_words_match_across_twists() {
    for case in cases() {
        let mut rng = Random::new(seed(&case));
        let wanted = pairs(&case, "words");
        let mut next = 0;
        for (index, value) in wanted {
            while next < index {
                rng.getrandbits(32);
                next += 1;
            }
            assert_eq!(
                rng.getrandbits(32),
                value,
                "seed {} word {index}",
                seed(&case)
            );
            next += 1;
        }
    }
}

#[test]
fn getrandbits_matches_for_every_width() {
    for case in cases() {
        let mut rng = Random::new(seed(&case));
        for (k, value) in pairs(&case, "getrandbits") {
            assert_eq!(
                rng.getrandbits(k as u32),
                value,
                "seed {} k {k}",
                seed(&case)
            );
        }
    }
}

#[test]
fn randbelow_matches_up_to_the_full_64_bit_range() {
    for case in cases() {
        let mut rng = Random::new(seed(&case));
        for (n, value) in pairs(&case, "randbelow") {
            assert_eq!(
                rng.randbelow(n as usize),
                value as usize,
                "seed {} n {n}",
                seed(&case)
            );
        }
    }
}

#[test]
fn random_floats_match_bit_for_bit() {
    for case in cases() {
        let mut rng = Random::new(seed(&case));
        for bits in case["random_bits"].as_array().expect("floats") {
            let x = rng.random();
            assert_eq!(
                x.to_bits(),
                bits.as_u64().expect("bits"),
                "seed {}",
                seed(&case)
            );
            assert!((0.0..1.0).contains(&x));
        }
    }
}

#[test]
fn shuffles_match() {
    for case in cases() {
        let mut rng = Random::new(seed(&case));
        for wanted in case["shuffles"].as_array().expect("shuffles") {
            let wanted = numbers(wanted);
            let mut items: Vec<usize> = (0..wanted.len()).collect();
            rng.shuffle(&mut items);
            assert_eq!(items, wanted, "seed {}", seed(&case));
        }
    }
}

#[test]
fn samples_match_in_both_branches() {
    let mut branches = std::collections::BTreeSet::new();
    for case in cases() {
        let mut rng = Random::new(seed(&case));
        for sample in case["samples"].as_array().expect("samples") {
            let n = sample["n"].as_u64().expect("n") as usize;
            let k = sample["k"].as_u64().expect("k") as usize;
            branches.insert(sample["branch"].as_str().expect("branch").to_owned());
            let population: Vec<usize> = (0..n).collect();
            assert_eq!(
                rng.sample(&population, k),
                numbers(&sample["picked"]),
                "seed {} n {n} k {k}",
                seed(&case)
            );
        }
    }
    assert_eq!(branches.into_iter().collect::<Vec<_>>(), ["pool", "set"]);
}
