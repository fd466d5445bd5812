// SPDX-License-Identifier: GPL-2.0

//! Data patterns both ends can produce and check without sharing state:
//! the bytes of message `index` of a run with `seed` are a function of those
//! two numbers and the position.

/// Fills `buf` with the pattern of message `index` under `seed`.
pub fn fill(buf: &mut [u8], seed: u64, index: u64) {
    // xorshift64*, seeded per message; never zero.
    let mut x = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d;
    if x == 0 {
        x = 1;
    }
    for chunk in buf.chunks_mut(8) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

/// The first offset where `buf` differs from the pattern, if any.
pub fn check(buf: &[u8], seed: u64, index: u64) -> Option<usize> {
    let mut want = vec![0u8; buf.len()];
    fill(&mut want, seed, index);
    buf.iter().zip(&want).position(|(a, b)| a != b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_deterministic_and_distinct() {
        let mut a = vec![0u8; 1000];
        let mut b = vec![0u8; 1000];
        fill(&mut a, 7, 3);
        fill(&mut b, 7, 3);
        assert_eq!(a, b);
        assert_eq!(check(&a, 7, 3), None);
        fill(&mut b, 7, 4);
        assert_ne!(a, b);
        assert!(check(&a, 8, 3).is_some());
    }

    #[test]
    fn check_finds_the_first_bad_byte() {
        let mut a = vec![0u8; 77];
        fill(&mut a, 1, 1);
        a[50] ^= 0xff;
        assert_eq!(check(&a, 1, 1), Some(50));
    }
}
