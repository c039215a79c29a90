//! "Did you mean ...?": the valid name closest to a misspelt one.

/// The candidate closest to `word`, if one is close enough to be a likely typo.
///
/// Case and `-`/`_` differences count as equal (`Max-Tokens` → `max_tokens`); otherwise the
/// Damerau-Levenshtein distance must be at most a third of the longer name (at least 1), or
/// one name must start with the other (`minibatch` → `minibatch_size`). Ties go to the
/// candidate listed first.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word = normalize(word);
    if word.is_empty() {
        return None;
    }
    if let Some(exact) = candidates.iter().find(|c| normalize(c) == word) {
        return Some(exact);
    }
    let mut best: Option<(usize, &'a str)> = None;
    for &candidate in candidates {
        let normalized = normalize(candidate);
        let distance = strsim::damerau_levenshtein(&word, &normalized);
        let longer = word.chars().count().max(normalized.chars().count());
        let close = distance <= (longer / 3).max(1) || is_prefix_typo(&word, &normalized);
        if close && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

fn normalize(name: &str) -> String {
    name.trim().to_lowercase().replace('-', "_")
}

/// One name is the start of the other and long enough not to be a coincidence.
fn is_prefix_typo(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.chars().count() >= 4 && long.starts_with(short)
}

#[cfg(test)]
mod tests {
    use super::closest;

    const OPTIMIZER_KEYS: &[&str] = &[
        "name",
        "rounds",
        "minibatch_size",
        "max_edits_per_round",
        "patience",
        "seed",
    ];

    #[test]
    fn one_letter_typo_suggests_the_key() {
        assert_eq!(closest("roundz", OPTIMIZER_KEYS), Some("rounds"));
        assert_eq!(closest("patince", OPTIMIZER_KEYS), Some("patience"));
    }

    #[test]
    fn transposed_letters_count_as_one_edit() {
        assert_eq!(closest("wieght", &["name", "weight"]), Some("weight"));
    }

    #[test]
    fn case_and_dashes_are_ignored() {
        assert_eq!(
            closest("Max-Tokens", &["temperature", "max_tokens"]),
            Some("max_tokens")
        );
    }

    #[test]
    fn truncated_name_suggests_the_full_one() {
        assert_eq!(closest("minibatch", OPTIMIZER_KEYS), Some("minibatch_size"));
    }

    #[test]
    fn unrelated_word_gets_no_suggestion() {
        assert_eq!(closest("banana", OPTIMIZER_KEYS), None);
        assert_eq!(closest("", OPTIMIZER_KEYS), None);
    }
}
