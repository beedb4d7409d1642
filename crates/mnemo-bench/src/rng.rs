//! SplitMix64: the bench's one small deterministic generator. The synthetic corpus and the
//! reliability trials and fuzz inputs all replay from their seeds.

/// The golden-ratio increment of SplitMix64.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded: the state is the seed mixed with the increment (the synthetic corpus's seeding).
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ GAMMA)
    }
    /// Seeded with the state itself (the reliability trials' `--seed`, as they replay).
    pub fn from_state(state: u64) -> Self {
        Rng(state)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `0..n` from the high bits (0 when n is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
    /// Uniform in `0..n` by remainder (0 when n is 0): the reliability trials' draw, kept so
    /// that a `--seed` replays the trials it always did.
    pub fn below_by_remainder(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    /// Roughly normal (sum of uniforms), mean 0, variance 1.
    pub fn normalish(&mut self) -> f32 {
        ((0..4).map(|_| self.unit()).sum::<f64>() - 2.0) as f32 * 1.732
    }
}
