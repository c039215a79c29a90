//! Epoch-shuffled minibatches of the train split, for `gepa` and `skillopt`: every train task
//! is drawn once before any is drawn again, so a small minibatch still covers the split, and
//! the order comes from the search's seeded generator.

use skill_factory_pycompat::random::Random;

/// Train tasks in epochs: a shuffled order, consumed a minibatch at a time, reshuffled once
/// used up.
pub struct Epochs {
    order: Vec<usize>,
    at: usize,
}

impl Epochs {
    /// The first epoch over `tasks` train tasks, shuffled by `rng`.
    pub fn new(tasks: usize, rng: &mut Random) -> Epochs {
        let mut order: Vec<usize> = (0..tasks).collect();
        rng.shuffle(&mut order);
        Epochs { order, at: 0 }
    }

    /// The next `size` tasks (fewer only when there are fewer train tasks).
    pub fn next(&mut self, size: usize, rng: &mut Random) -> Vec<usize> {
        let size = size.min(self.order.len());
        let mut batch = Vec::with_capacity(size);
        while batch.len() < size {
            if self.at == self.order.len() {
                rng.shuffle(&mut self.order);
                self.at = 0;
            }
            let task = self.order[self.at];
            self.at += 1;
            if !batch.contains(&task) {
                batch.push(task);
            }
        }
        batch
    }

    /// The `size` tasks after the current position that are not in `besides`, without
    /// consuming them: the extension of an adaptive gate.
    pub fn peek(&self, size: usize, besides: &[usize]) -> Vec<usize> {
        let n = self.order.len();
        (0..n)
            .map(|k| self.order[(self.at + k) % n])
            .filter(|task| !besides.contains(task))
            .take(size)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_draws_every_task_once_before_any_again() {
        let mut rng = Random::new(7);
        let mut epochs = Epochs::new(5, &mut rng);
        let mut first: Vec<usize> = epochs.next(2, &mut rng);
        first.extend(epochs.next(3, &mut rng));
        first.sort_unstable();
        assert_eq!(first, vec![0, 1, 2, 3, 4]);
        assert_eq!(
            epochs.next(9, &mut rng).len(),
            5,
            "never more than the split"
        );
    }

    #[test]
    fn peeking_consumes_nothing_and_skips_the_given_tasks() {
        let mut rng = Random::new(1);
        let mut epochs = Epochs::new(6, &mut rng);
        let batch = epochs.next(2, &mut rng);
        let peeked = epochs.peek(2, &batch);
        assert!(peeked.iter().all(|task| !batch.contains(task)));
        assert_eq!(epochs.next(2, &mut rng), peeked);
    }

    #[test]
    fn the_same_seed_draws_the_same_minibatches() {
        let draw = || {
            let mut rng = Random::new(3);
            let mut epochs = Epochs::new(10, &mut rng);
            (0..4).map(|_| epochs.next(3, &mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(), draw());
    }
}
