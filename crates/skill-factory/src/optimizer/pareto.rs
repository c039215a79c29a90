//! The per-task Pareto frontier of a candidate pool, GEPA's parent selection.
//!
//! Picking the candidate with the best mean as the next parent makes the search greedy: an
//! instruction that only some tasks need is lost as soon as a rewrite with a better average
//! drops it. Drawing parents from the candidates that are the best on at least one
//! validation task, weighted by on how many, keeps such instructions alive while still
//! favouring the broadly good.
//!
//! `scores[c][t]` is candidate c's score on validation task t (every candidate scored on
//! every task, scores in `0..=1`). Scores within an epsilon ([`EPSILON`]) of each other are
//! ties.

use skill_factory_core::stats::{self, Weights};
use skill_factory_pycompat::random::Random;

/// Score differences within this are ties (continuous scores from a judge wobble).
pub const EPSILON: f64 = 1e-6;

/// Whether `b` dominates `a`: at least as good on every task (within `epsilon`) and better by
/// more than `epsilon` on one. Tasks are compared by position, over the tasks both have.
pub fn dominates(b: &[f64], a: &[f64], epsilon: f64) -> bool {
    let pairs = || b.iter().zip(a);
    pairs().all(|(b, a)| *b >= a - epsilon) && pairs().any(|(b, a)| *b > a + epsilon)
}

/// One frontier member: the candidate and on how many tasks it is among the best.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// The candidate's position in the pool.
    pub candidate: usize,
    /// How many tasks have it among their best (always at least one).
    pub tasks: usize,
}

/// The frontier of `scores`: for each task the candidates within `epsilon` of that task's
/// best score; their union, without the candidates another candidate of the union
/// dominates; each member with the number of tasks whose best set holds it. Sorted by
/// candidate. Candidates with identical score vectors are all kept. An empty pool or zero
/// tasks gives an empty frontier; a candidate with fewer scores than the others limits the
/// tasks to as many as it has.
///
/// Ties make dominance intransitive, so near-ties can form a cycle in which every candidate
/// of the union is dominated by another; pruning would then leave no parent at all, and the
/// union is kept whole instead.
pub fn frontier(scores: &[Vec<f64>], epsilon: f64) -> Vec<Member> {
    let tasks = scores.iter().map(Vec::len).min().unwrap_or(0);
    let best_sets: Vec<Vec<usize>> = (0..tasks)
        .map(|t| {
            let best = scores
                .iter()
                .map(|s| s[t])
                .fold(f64::NEG_INFINITY, f64::max);
            (0..scores.len())
                .filter(|&c| scores[c][t] >= best - epsilon)
                .collect()
        })
        .collect();
    let mut union = best_sets.concat();
    union.sort_unstable();
    union.dedup();
    let undominated: Vec<usize> = union
        .iter()
        .copied()
        .filter(|&a| {
            !union
                .iter()
                .any(|&b| dominates(&scores[b], &scores[a], epsilon))
        })
        .collect();
    let kept = if undominated.is_empty() {
        union
    } else {
        undominated
    };
    kept.into_iter()
        .map(|candidate| Member {
            candidate,
            tasks: best_sets
                .iter()
                .filter(|set| set.binary_search(&candidate).is_ok())
                .count(),
        })
        .collect()
}

/// A parent drawn from `frontier` with probability proportional to `tasks`: one
/// `rng.randbelow(total)` draw, walked over the members in the order given (candidate order
/// for a [`frontier`]), so the same seed always draws the same parent. `None` for an empty
/// frontier, or one whose members all weigh zero.
pub fn sample(frontier: &[Member], rng: &mut Random) -> Option<usize> {
    let total: usize = frontier.iter().map(|m| m.tasks).sum();
    if total == 0 {
        return None;
    }
    let mut draw = rng.randbelow(total);
    frontier
        .iter()
        .find(|member| {
            if draw < member.tasks {
                return true;
            }
            draw -= member.tasks;
            false
        })
        .map(|member| member.candidate)
}

/// Racing: whether a partly scored candidate can still matter. `partial[t]` is its score on
/// task t, or `None` while unscored. Counting every unscored task at `max`, can its mean (by
/// the tasks' `weights`) beat
/// `best_mean` by more than `epsilon`, or is it dominated by no candidate of `pool`? When
/// neither, scoring the rest of the tasks cannot change the search (it could neither become
/// the best nor join the frontier), so it can stop.
pub fn can_still_matter(
    (partial, weights): (&[Option<f64>], Weights<'_>),
    pool: &[Vec<f64>],
    best_mean: f64,
    max: f64,
    epsilon: f64,
) -> bool {
    let optimistic: Vec<f64> = partial.iter().map(|s| s.unwrap_or(max)).collect();
    let mean = stats::mean(&optimistic, weights);
    mean > best_mean + epsilon
        || !pool
            .iter()
            .any(|scores| dominates(scores, &optimistic, epsilon))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(candidate: usize, tasks: usize) -> Member {
        Member { candidate, tasks }
    }

    #[test]
    fn two_candidates_that_each_win_a_different_task_are_both_on_the_frontier() {
        let scores = vec![vec![0.2, 0.2], vec![1.0, 0.0], vec![0.0, 1.0]];
        assert_eq!(frontier(&scores, EPSILON), [member(1, 1), member(2, 1)]);
    }

    #[test]
    fn a_candidate_worse_everywhere_is_pruned() {
        // Candidate 0 ties candidate 1 on task 0, so it is among that task's best, but it
        // loses task 1: dominated.
        let scores = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![0.5, 0.5]];
        assert_eq!(frontier(&scores, EPSILON), [member(1, 2)]);
    }

    #[test]
    fn score_differences_within_epsilon_are_ties() {
        let scores = vec![vec![0.5, 0.5], vec![0.5 + 1e-9, 0.5 - 1e-9]];
        assert!(!dominates(&scores[1], &scores[0], EPSILON));
        assert!(!dominates(&scores[0], &scores[1], EPSILON));
        assert!(dominates(&[0.6, 0.5], &scores[0], EPSILON));
        assert_eq!(frontier(&scores, EPSILON), [member(0, 2), member(1, 2)]);
    }

    #[test]
    fn candidates_with_identical_scores_are_all_kept() {
        let scores = vec![vec![0.7, 0.3], vec![0.7, 0.3], vec![0.1, 0.1]];
        assert_eq!(frontier(&scores, EPSILON), [member(0, 2), member(1, 2)]);
    }

    #[test]
    fn an_empty_pool_or_no_tasks_gives_an_empty_frontier() {
        assert!(frontier(&[], EPSILON).is_empty());
        assert!(frontier(&[vec![], vec![]], EPSILON).is_empty());
    }

    #[test]
    fn near_ties_that_dominate_each_other_in_a_cycle_keep_the_whole_union() {
        // With a wide epsilon, b dominates a, c dominates b and a dominates c.
        let (a, b, c) = (
            vec![0.5, 0.5, 0.5],
            vec![0.61, 0.41, 0.41],
            vec![0.52, 0.52, 0.32],
        );
        assert!(dominates(&b, &a, 0.1) && dominates(&c, &b, 0.1) && dominates(&a, &c, 0.1));
        assert_eq!(
            frontier(&[a, b, c], 0.1),
            [member(0, 2), member(1, 2), member(2, 2)]
        );
    }

    #[test]
    fn sampling_is_deterministic_for_a_seed_and_never_draws_a_zero_weight() {
        let front = [member(3, 3), member(7, 1), member(9, 0)];
        let draws = |seed| {
            let mut rng = Random::new(seed);
            (0..400)
                .map(|_| sample(&front, &mut rng).unwrap())
                .collect::<Vec<_>>()
        };
        let picks = draws(5);
        assert_eq!(picks, draws(5));
        assert!(!picks.contains(&9));
        let threes = picks.iter().filter(|&&c| c == 3).count();
        // Three in four, give or take five standard deviations.
        assert!((256..344).contains(&threes), "{threes}");
    }

    #[test]
    fn sampling_nothing_to_draw_from_gives_none() {
        let mut rng = Random::new(0);
        assert_eq!(sample(&[], &mut rng), None);
        assert_eq!(sample(&[member(4, 0)], &mut rng), None);
        assert_eq!(sample(&[member(4, 2)], &mut rng), Some(4));
    }

    #[test]
    fn a_candidate_that_lost_a_task_to_a_member_perfect_where_it_is_unscored_cannot_matter() {
        let lost = [Some(1.0), Some(0.0), None, None];
        assert!(!can_still_matter(
            (&lost, &[]),
            &[vec![1.0; 4]],
            1.0,
            1.0,
            EPSILON
        ));
        // Not perfect on task 1 either, only better there.
        assert!(!can_still_matter(
            (&lost, &[]),
            &[vec![1.0, 0.5, 1.0, 1.0]],
            0.875,
            1.0,
            EPSILON
        ));
    }

    #[test]
    fn a_candidate_that_could_still_win_an_unscored_task_matters() {
        let lost = [Some(1.0), Some(0.0), None, None];
        assert!(can_still_matter(
            (&lost, &[]),
            &[vec![1.0, 1.0, 0.9, 1.0]],
            0.975,
            1.0,
            EPSILON
        ));
    }

    #[test]
    fn a_candidate_matters_while_an_optimistic_completion_beats_the_best() {
        let partial = [Some(1.0), Some(0.0), None, None];
        assert!(can_still_matter(
            (&partial, &[]),
            &[vec![0.5; 4]],
            0.5,
            1.0,
            EPSILON
        ));
        // Dominated, but its best case of 0.75 still beats the best mean given.
        assert!(can_still_matter(
            (&partial, &[]),
            &[vec![1.0; 4]],
            0.6,
            1.0,
            EPSILON
        ));
        // Fully scored, below the best and dominated: nothing is left to decide.
        let done = [Some(1.0), Some(0.0), Some(0.5), Some(0.5)];
        assert!(!can_still_matter(
            (&done, &[]),
            &[vec![1.0, 0.5, 0.5, 0.5]],
            0.625,
            1.0,
            EPSILON
        ));
    }
}
