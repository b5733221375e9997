//! A Bloom filter of one graph part's strings and of their short prefixes, for processes
//! that keep a graph open (the daemon, the MCP server). A name lookup reads every part of
//! a segmented graph (91 on sympy), and in each part a binary search over its strings
//! costs a chain of dependent reads from the mapping; the filter rules most parts out
//! with three bit tests in memory the process owns.
//!
//! It only ever rules out: a string or prefix the part holds always passes (no false
//! negatives, `tests::every_string_and_prefix_it_was_given_passes`), so a lookup through
//! it answers exactly what the search of every part answers.

/// Shortest and longest prefix filtered: a prefix scan for `rational` tests `rational`'s
/// first eight bytes; one for `rat` is not filtered.
pub const PREFIX_MIN: usize = 4;
const PREFIX_MAX: usize = 8;

/// Bits per entry (a string, or one of its prefixes): with three probes about 1.7% of
/// absent keys pass.
const BITS_PER_ENTRY: usize = 10;
const PROBES: u64 = 3;

/// Keys are hashed apart by what they are: a prefix never passes for a whole string.
const WHOLE: u64 = 0;
const PREFIX: u64 = 0x9e37_79b9_7f4a_7c15;

pub struct StringFilter {
    bits: Vec<u64>,
    /// `bits.len() * 64 - 1`: the bit count is a power of two.
    mask: u64,
}

impl StringFilter {
    /// The filter of `strings` and of each one's prefixes of `PREFIX_MIN..=PREFIX_MAX`
    /// bytes.
    pub fn of<'a>(strings: impl Iterator<Item = &'a [u8]> + Clone) -> StringFilter {
        let entries: usize = strings
            .clone()
            .map(|s| 1 + s.len().min(PREFIX_MAX).saturating_sub(PREFIX_MIN - 1))
            .sum();
        let bit_count = (entries.max(1) * BITS_PER_ENTRY)
            .next_power_of_two()
            .max(64);
        let mut filter = StringFilter {
            bits: vec![0; bit_count / 64],
            mask: bit_count as u64 - 1,
        };
        for string in strings {
            filter.insert(WHOLE, string);
            for len in PREFIX_MIN..=string.len().min(PREFIX_MAX) {
                filter.insert(PREFIX, &string[..len]);
            }
        }
        filter
    }

    /// False only when no string given to `of` is `key`.
    pub fn may_hold(&self, key: &[u8]) -> bool {
        self.test(WHOLE, key)
    }

    /// False only when no string given to `of` starts with `prefix`; true for a prefix
    /// shorter than `PREFIX_MIN`, which is not filtered.
    pub fn may_start(&self, prefix: &[u8]) -> bool {
        prefix.len() < PREFIX_MIN || self.test(PREFIX, &prefix[..prefix.len().min(PREFIX_MAX)])
    }

    fn positions(&self, domain: u64, key: &[u8]) -> impl Iterator<Item = u64> + use<> {
        use std::hash::Hasher;
        let mut hasher = rustc_hash::FxHasher::default();
        hasher.write_u64(domain);
        hasher.write(key);
        // FxHash's low bits are weak: mixed before the two halves make the probes.
        let hash = mix(hasher.finish());
        let (first, step) = (hash, (hash >> 32) | 1);
        let mask = self.mask;
        (0..PROBES).map(move |i| first.wrapping_add(i.wrapping_mul(step)) & mask)
    }

    fn insert(&mut self, domain: u64, key: &[u8]) {
        for bit in self.positions(domain, key) {
            self.bits[(bit / 64) as usize] |= 1 << (bit % 64);
        }
    }

    fn test(&self, domain: u64, key: &[u8]) -> bool {
        self.positions(domain, key)
            .all(|bit| self.bits[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }

    /// Bytes the filter holds.
    pub fn byte_len(&self) -> usize {
        self.bits.len() * 8
    }
}

/// The finaliser of MurmurHash3: every input bit moves every output bit.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn filter_of(strings: &[Vec<u8>]) -> StringFilter {
        StringFilter::of(strings.iter().map(Vec::as_slice))
    }

    proptest! {
        #[test]
        fn every_string_and_prefix_it_was_given_passes(
            strings in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..24), 0..200)
        ) {
            let filter = filter_of(&strings);
            for string in &strings {
                prop_assert!(filter.may_hold(string));
                for len in 0..=string.len() {
                    prop_assert!(filter.may_start(&string[..len]), "{:?} of {:?}", &string[..len], string);
                }
            }
        }
    }

    #[test]
    fn most_absent_strings_and_prefixes_are_ruled_out() {
        let strings: Vec<Vec<u8>> = (0..5000)
            .map(|i| format!("name_{i}_segment").into_bytes())
            .collect();
        let filter = filter_of(&strings);
        let absent = 10_000;
        let passed = (0..absent)
            .filter(|i| filter.may_hold(format!("other_{i}").as_bytes()))
            .count();
        assert!(
            passed < absent / 20,
            "{passed} of {absent} absent strings passed"
        );
        let passed = (0..absent)
            .filter(|i| filter.may_start(format!("zq{i}").as_bytes()))
            .count();
        assert!(
            passed < absent / 20,
            "{passed} of {absent} absent prefixes passed"
        );
        // A prefix is not a whole string, and short prefixes are never filtered.
        assert!(!filter.may_hold(b"name"));
        assert!(filter.may_start(b"zzz"));
        assert!(!filter.may_start(b"zzzz"));
    }

    #[test]
    fn an_empty_filter_rules_everything_out_but_short_prefixes() {
        let filter = filter_of(&[]);
        assert!(!filter.may_hold(b"anything"));
        assert!(!filter.may_start(b"anything"));
        assert!(filter.may_start(b"any"));
        assert!(filter.byte_len() >= 8);
    }
}
