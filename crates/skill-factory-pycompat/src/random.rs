//! CPython's `random.Random`, bit for bit, for the calls the reference tool makes.
//!
//! The Python tool shuffles datasets and samples minibatches with `random.Random(seed)`. To
//! give the same train/validation split and the same minibatches for the same seed, this is
//! the MT19937 of `rand_mt` seeded as CPython seeds it (`init_by_array` over the seed's 32-bit
//! words), with CPython's derived methods (`getrandbits`, `_randbelow`, `shuffle`, `sample`,
//! `random`) on top, checked against CPython 3.11 output.

use rand_mt::Mt;

/// A Mersenne Twister seeded and driven exactly like CPython's `random.Random(seed)` for a
/// non-negative integer seed.
#[derive(Debug, Clone)]
pub struct Random {
    mt: Mt,
}

impl Random {
    /// `random.Random(seed)`: `init_by_array` over the seed's 32-bit little-endian words (one
    /// word `[0]` for seed 0, two words for seeds of 2^32 and above).
    pub fn new(seed: u64) -> Self {
        let low = seed as u32;
        let high = (seed >> 32) as u32;
        let key: &[u32] = if high == 0 { &[low] } else { &[low, high] };
        Random {
            mt: Mt::new_with_key(key.iter().copied()),
        }
    }

    /// The next raw 32-bit output (`genrand_uint32`).
    fn next_u32(&mut self) -> u32 {
        self.mt.next_u32()
    }

    /// `getrandbits(k)`: an integer of `k` random bits. Consumes one 32-bit output per started
    /// 32 bits, least significant word first, the last word keeping its top bits. `k` above 64
    /// is treated as 64 (the result must fit a `u64`); `k = 0` returns 0 and consumes nothing.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        let k = k.min(64);
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        (high << 32) | low
    }

    /// `_randbelow(n)`: uniform in `0..n` by rejection sampling on `getrandbits(bit_length(n))`.
    /// `n = 0` returns 0 and consumes nothing (CPython 3.11 would loop forever).
    pub fn randbelow(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let n = n as u64;
        let bits = u64::BITS - n.leading_zeros();
        loop {
            let r = self.getrandbits(bits);
            if r < n {
                // r < n, and n came from a usize.
                return r as usize;
            }
        }
    }

    /// `shuffle(x)`: Fisher–Yates from the end, `j = randbelow(i + 1)` for `i` from `len − 1`
    /// down to 1.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.randbelow(i + 1);
            items.swap(i, j);
        }
    }

    /// `sample(population, k)`: `k` distinct elements in selection order, using the same
    /// branch as CPython (a shrinking pool copy for small populations, rejection of already
    /// chosen indices for large ones), so the same elements come out in the same order.
    ///
    /// CPython raises when `k` exceeds the population; here `k` is capped at its length.
    pub fn sample<T: Clone>(&mut self, population: &[T], k: usize) -> Vec<T> {
        let n = population.len();
        let k = k.min(n);
        let mut result = Vec::with_capacity(k);
        if n <= sample_set_size(k) {
            let mut pool: Vec<T> = population.to_vec();
            for i in 0..k {
                let j = self.randbelow(n - i);
                result.push(pool[j].clone());
                pool[j] = pool[n - i - 1].clone();
            }
        } else {
            let mut selected = std::collections::HashSet::with_capacity(k);
            for _ in 0..k {
                let mut j = self.randbelow(n);
                while !selected.insert(j) {
                    j = self.randbelow(n);
                }
                result.push(population[j].clone());
            }
        }
        result
    }

    /// `random()`: a float in [0, 1) with 53 random bits, built from two 32-bit outputs
    /// (27 + 26 bits).
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }
}

/// CPython's threshold between `sample`'s two branches: 21, plus `4^ceil(log4(3k))` when
/// k > 5 (the size of the smallest hash table that would hold the selected set).
fn sample_set_size(k: usize) -> usize {
    let mut size: usize = 21;
    if k > 5 {
        // Mirrors CPython's float `_ceil(_log(k * 3, 4))`, which `math.log(x, base)` computes
        // as ln(x) / ln(base).
        let exponent = ((k as f64 * 3.0).ln() / 4f64.ln()).ceil() as u32;
        size = size.saturating_add(4usize.saturating_pow(exponent));
    }
    size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_zero_gives_cpython_first_outputs() {
        let mut rng = Random::new(0);
        assert_eq!(rng.getrandbits(32), 3_626_764_237);
        assert_eq!(rng.getrandbits(32), 1_654_615_998);
        assert_eq!(rng.getrandbits(32), 3_255_389_356);
    }

    #[test]
    fn sample_branch_threshold_follows_cpython() {
        assert_eq!(sample_set_size(1), 21);
        assert_eq!(sample_set_size(5), 21);
        assert_eq!(sample_set_size(6), 21 + 64);
        assert_eq!(sample_set_size(22), 21 + 256);
    }

    #[test]
    fn sample_caps_k_at_population_size() {
        let mut rng = Random::new(1);
        let mut picked = rng.sample(&[1, 2, 3], 10);
        picked.sort();
        assert_eq!(picked, vec![1, 2, 3]);
    }

    #[test]
    fn randbelow_zero_consumes_nothing() {
        let mut a = Random::new(5);
        let mut b = Random::new(5);
        assert_eq!(a.randbelow(0), 0);
        assert_eq!(a.getrandbits(32), b.getrandbits(32));
    }
}
