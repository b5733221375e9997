//! An int8 copy of the vector rows, for processes that keep loaded indexes (the daemon,
//! the MCP server): it rules rows out of a query's nearest neighbours without reading the
//! 4-byte floats, so a warm query scans a quarter of the bytes.
//!
//! It never decides a ranking. Each row's approximate cosine comes with a bound on its
//! error; a row is kept when its upper bound reaches the `keep`-th best lower bound of
//! its kind, and the kept rows are scored again from the floats, exactly as the full scan
//! scores them. Every row left out is below at least `keep` kept rows, so the best `keep`
//! are the full scan's, to the bit (`tests::the_kept_rows_hold_the_exact_best`).

/// Slack for float rounding on top of the quantisation bound: the exact cosine is itself
/// an f32 sum of `dim` products (error near 1e-5 for unit vectors of 256), and the
/// approximate one a product of three floats.
const SLOP: f64 = 1e-4;

/// Rows quantised to int8, each with its scale: `row[i] ≈ scale × code[i]`, off by at
/// most `scale / 2`.
pub(super) struct Quantized {
    dim: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
    /// `Σ |scale × code[i]|` per row: how far the query's own rounding can move a dot.
    l1: Vec<f32>,
}

/// A query vector quantised like a row.
struct Query {
    codes: Vec<i8>,
    scale: f64,
    /// `Σ |q[i]|`, of the float query.
    l1: f64,
}

/// `value / scale` rounded to int8 (`scale` is the row's largest magnitude / 127).
fn code(value: f32, scale: f32) -> i8 {
    if scale == 0.0 {
        0
    } else {
        (value / scale).round().clamp(-127.0, 127.0) as i8
    }
}

impl Quantized {
    /// Quantises `rows` vectors of `dim` little-endian f32, row `r`'s bytes being
    /// `row(r)`. A row that is missing, not finite or longer than a unit vector is
    /// damaged: the error names it.
    pub(super) fn build<'a>(
        rows: usize,
        dim: usize,
        row_bytes: impl Fn(usize) -> Option<&'a [u8]>,
    ) -> Result<Quantized, String> {
        let mut codes = Vec::with_capacity(rows * dim);
        let mut scales = Vec::with_capacity(rows);
        let mut l1 = Vec::with_capacity(rows);
        let mut values = vec![0f32; dim];
        for row in 0..rows {
            let bytes = row_bytes(row).ok_or_else(|| format!("vector row {row} is missing"))?;
            for (value, chunk) in values.iter_mut().zip(bytes.as_chunks::<4>().0) {
                *value = f32::from_le_bytes(*chunk);
            }
            let norm = values.iter().map(|x| x * x).sum::<f32>().sqrt();
            if !norm.is_finite() || norm > 1.001 {
                return Err(format!("vector row {row} is damaged (norm {norm})"));
            }
            let scale = values.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
            let start = codes.len();
            codes.extend(values.iter().map(|&x| code(x, scale)));
            let sum: u32 = codes[start..]
                .iter()
                .map(|c| u32::from(c.unsigned_abs()))
                .sum();
            scales.push(scale);
            l1.push(scale * sum as f32);
        }
        Ok(Quantized {
            dim,
            codes,
            scales,
            l1,
        })
    }

    fn query(&self, q: &[f32]) -> Query {
        let scale = q.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
        Query {
            codes: q.iter().map(|&x| code(x, scale)).collect(),
            scale: f64::from(scale),
            l1: q.iter().map(|x| f64::from(x.abs())).sum(),
        }
    }

    /// The rows (in row order) that may be among the best `keep` cosines with `q` of
    /// their kind (`is_second_kind(row)` splits them in two, each ranked on its own).
    pub(super) fn candidates(
        &self,
        q: &[f32],
        keep: usize,
        is_second_kind: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let query = self.query(q);
        let rows = self.scales.len();
        // (lower, upper) bound of each row's exact cosine.
        let bounds: Vec<(f64, f64)> = (0..rows)
            .map(|row| {
                let codes = &self.codes[row * self.dim..(row + 1) * self.dim];
                let scale = f64::from(self.scales[row]);
                let approx = scale * query.scale * f64::from(dot_i8(codes, &query.codes));
                // |r·q − r̂·q̂| ≤ |(r − r̂)·q| + |r̂·(q − q̂)| ≤ (s_r/2)‖q‖₁ + (s_q/2)‖r̂‖₁
                let error =
                    scale / 2.0 * query.l1 + query.scale / 2.0 * f64::from(self.l1[row]) + SLOP;
                (approx - error, approx + error)
            })
            .collect();
        let mut threshold = [f64::NEG_INFINITY; 2];
        for (kind, threshold) in threshold.iter_mut().enumerate() {
            let mut lower: Vec<f64> = (0..rows)
                .filter(|&row| usize::from(is_second_kind(row)) == kind)
                .map(|row| bounds[row].0)
                .collect();
            if keep > 0 && lower.len() > keep {
                let (_, kth, _) = lower.select_nth_unstable_by(keep - 1, |a, b| b.total_cmp(a));
                *threshold = *kth;
            }
        }
        (0..rows)
            .filter(|&row| bounds[row].1 >= threshold[usize::from(is_second_kind(row))])
            .collect()
    }
}

/// Integer dot product of two rows, with the widest vector instructions this CPU has.
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { dot_i8_avx2(a, b) };
    }
    dot_i8_lanes(a, b)
}

/// `dot_i8_lanes` compiled for AVX2: twice the lanes of the baseline's SSE2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    dot_i8_lanes(a, b)
}

/// Integer dot product in independent lanes, which the compiler vectorises (multiply-add
/// of 16-bit pairs); exact: 256 × 127² is far from overflow.
#[inline(always)]
fn dot_i8_lanes(a: &[i8], b: &[i8]) -> i32 {
    let mut lanes = [0i32; 32];
    let (a_chunks, a_rest) = a.as_chunks::<32>();
    let (b_chunks, b_rest) = b.as_chunks::<32>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for lane in 0..32 {
            lanes[lane] += i32::from(x[lane]) * i32::from(y[lane]);
        }
    }
    let tail: i32 = a_rest
        .iter()
        .zip(b_rest)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    lanes.iter().sum::<i32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic unit vectors (xorshift), some near-duplicates of others so that
    /// cosines crowd around the threshold.
    fn unit_rows(rows: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 20_001) as f32 / 10_000.0 - 1.0
        };
        let mut out: Vec<Vec<f32>> = Vec::new();
        for row in 0..rows {
            let mut v: Vec<f32> = if row % 5 == 4 {
                // A near-duplicate of an earlier row.
                out[row / 2].iter().map(|x| x + next() * 1e-3).collect()
            } else {
                (0..dim).map(|_| next()).collect()
            };
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            out.push(v);
        }
        out
    }

    /// `Quantized::build` over rows laid end to end in `payload`.
    fn from_payload(payload: &[u8], rows: usize, dim: usize) -> Result<Quantized, String> {
        let width = dim * 4;
        Quantized::build(rows, dim, |r| payload.get(r * width..(r + 1) * width))
    }

    fn payload(rows: &[Vec<f32>]) -> Vec<u8> {
        rows.iter()
            .flat_map(|r| r.iter().flat_map(|x| x.to_le_bytes()))
            .collect()
    }

    /// The best `keep` rows of a kind, by the exact f32 dot, ties by row: as `nearest`.
    fn best(rows: &[Vec<f32>], q: &[f32], keep: usize, of: impl Fn(usize) -> bool) -> Vec<usize> {
        let mut scored: Vec<(f32, usize)> = (0..rows.len())
            .filter(|&r| of(r))
            .map(|r| (super::super::dot(&rows[r], q), r))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(keep).map(|(_, r)| r).collect()
    }

    #[test]
    fn the_kept_rows_hold_the_exact_best() {
        let dim = 64;
        let rows = unit_rows(3_000, dim, 0x9e37_79b9);
        let quantized = from_payload(&payload(&rows), rows.len(), dim).unwrap();
        let queries = unit_rows(40, dim, 0x1234_5678);
        let second = |row: usize| row.is_multiple_of(7);
        for (i, q) in queries.iter().chain(rows.iter().take(10)).enumerate() {
            for keep in [1, 10, 50] {
                let kept = quantized.candidates(q, keep, second);
                assert!(kept.windows(2).all(|w| w[0] < w[1]), "row order");
                for kind in [false, true] {
                    let of = |r: usize| second(r) == kind;
                    let whole = best(&rows, q, keep, of);
                    let kept_rows: Vec<Vec<f32>> = kept.iter().map(|&r| rows[r].clone()).collect();
                    let among: Vec<usize> = best(&kept_rows, q, keep, |k| of(kept[k]))
                        .into_iter()
                        .map(|k| kept[k])
                        .collect();
                    assert_eq!(among, whole, "query {i}, keep {keep}, kind {kind}");
                }
                // It rules rows out: otherwise it would be no faster than the scan.
                assert!(
                    kept.len() < rows.len() / 2,
                    "query {i}: kept {}",
                    kept.len()
                );
            }
        }
    }

    #[test]
    fn a_row_that_is_not_a_unit_vector_is_damaged() {
        let dim = 8;
        let mut rows = unit_rows(4, dim, 7);
        rows[2][3] = f32::NAN;
        let error = from_payload(&payload(&rows), 4, dim).err().unwrap();
        assert!(error.contains("vector row 2 is damaged"), "{error}");
        rows[2] = vec![1.0; dim];
        let error = from_payload(&payload(&rows), 4, dim).err().unwrap();
        assert!(error.contains("vector row 2 is damaged"), "{error}");
        // Short payload: a row missing.
        let bytes = payload(&rows[..3]);
        assert!(from_payload(&bytes, 4, dim).is_err());
    }

    #[test]
    fn a_zero_query_keeps_every_row() {
        let dim = 16;
        let rows = unit_rows(50, dim, 99);
        let quantized = from_payload(&payload(&rows), rows.len(), dim).unwrap();
        let kept = quantized.candidates(&vec![0.0; dim], 5, |_| false);
        assert_eq!(kept.len(), rows.len());
    }
}
