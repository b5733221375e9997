//! An int8 copy of the vector rows, for processes that keep loaded indexes (the daemon,
//! the MCP server): it rules rows out of a query's nearest neighbours without reading the
//! 4-byte floats, so a warm query scans a quarter of the bytes.
//!
//! It never decides a ranking. Each row's approximate cosine comes with a bound on its
//! error; a row is kept when its upper bound reaches the `keep`-th best lower bound of
//! its kind, and the kept rows are scored again from the floats, exactly as the full scan
//! scores them. Every row left out is below at least `keep` kept rows, so the best `keep`
//! are the full scan's, to the bit (`tests::the_kept_rows_hold_the_exact_best`).
//!
//! The scan goes in chunks that any thread may take (`Scan::help`): the search thread,
//! done with its own arms, shares the rest of the scan, which is bound by memory reads
//! (12 MB on sympy). Who scanned a chunk never changes what is kept.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::{Condvar, Mutex};

/// Slack for float rounding on top of the quantisation bound: the exact cosine is itself
/// an f32 sum of `dim` products (error near 1e-5 for unit vectors of 256), and the
/// approximate one a product of three floats.
const SLOP: f64 = 1e-4;

/// Rows per chunk of a scan: about 0.5 MB of codes at 256 dimensions.
const CHUNK_ROWS: usize = 2048;

/// Rows quantised to int8, each with its scale: `row[i] ≈ scale × code[i]`, off by at
/// most `scale / 2`.
pub(super) struct Quantized {
    dim: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
    /// `Σ |scale × code[i]|` per row: how far the query's own rounding can move a dot.
    l1: Vec<f32>,
    /// `Σ code[i]` per row: what the query's +128 bias adds to a biased dot (`Dot`).
    sums: Vec<i32>,
    /// Each row's kind (false: first, true: second), ranked apart.
    second: Vec<bool>,
    /// How many rows each kind has.
    per_kind: [usize; 2],
}

/// A query vector quantised like a row.
struct Query {
    codes: Vec<i8>,
    /// `codes[i] + 128`, for the unsigned-by-signed multiply-add of VNNI (`Dot`).
    biased: Vec<u8>,
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

/// An f64 ordered by `total_cmp`, for the heaps of best lower bounds.
#[derive(Clone, Copy, PartialEq)]
struct Bound(f64);

impl Eq for Bound {}

impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bound {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Quantized {
    /// Quantises `rows` vectors of `dim` little-endian f32, row `r`'s bytes being
    /// `row(r)` and its kind `is_second_kind(r)`. A row that is missing, not finite or
    /// longer than a unit vector is damaged: the error names it.
    pub(super) fn build<'a>(
        rows: usize,
        dim: usize,
        row_bytes: impl Fn(usize) -> Option<&'a [u8]>,
        is_second_kind: impl Fn(usize) -> bool,
    ) -> Result<Quantized, String> {
        let mut codes = Vec::with_capacity(rows * dim);
        let mut scales = Vec::with_capacity(rows);
        let mut l1 = Vec::with_capacity(rows);
        let mut sums = Vec::with_capacity(rows);
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
            sums.push(codes[start..].iter().map(|&c| i32::from(c)).sum());
        }
        let second: Vec<bool> = (0..rows).map(is_second_kind).collect();
        let seconds = second.iter().filter(|&&s| s).count();
        Ok(Quantized {
            dim,
            codes,
            scales,
            l1,
            sums,
            second,
            per_kind: [rows - seconds, seconds],
        })
    }

    fn query(&self, q: &[f32]) -> Query {
        let scale = q.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
        let codes: Vec<i8> = q.iter().map(|&x| code(x, scale)).collect();
        Query {
            biased: codes.iter().map(|&c| (i16::from(c) + 128) as u8).collect(),
            codes,
            scale: f64::from(scale),
            l1: q.iter().map(|x| f64::from(x.abs())).sum(),
        }
    }

    /// A scan for the rows that may be among the best `keep` cosines with `q` of their
    /// kind; `Scan::candidates` answers it.
    pub(super) fn scan(&self, q: &[f32], keep: usize) -> Scan<'_> {
        Scan {
            quantized: self,
            query: self.query(q),
            keep,
            chunks: self.scales.len().div_ceil(CHUNK_ROWS),
            state: Mutex::new(State::default()),
            finished: Condvar::new(),
        }
    }

    /// The rows (in row order) that may be among the best `keep` cosines with `q` of
    /// their kind, scanned by this thread alone.
    #[cfg(test)]
    pub(super) fn candidates(&self, q: &[f32], keep: usize) -> Vec<usize> {
        self.scan(q, keep).candidates().expect("one thread scans")
    }
}

/// One query's scan, shared by whichever threads help.
pub(super) struct Scan<'q> {
    quantized: &'q Quantized,
    query: Query,
    keep: usize,
    chunks: usize,
    state: Mutex<State>,
    /// Signalled when a helper finishes (or loses) a chunk.
    finished: Condvar,
}

#[derive(Default)]
struct State {
    /// The next chunk to take.
    next: usize,
    /// Chunks taken and not yet given back.
    active: usize,
    parts: Vec<Part>,
    /// A helper panicked inside a chunk: its rows were never scored.
    lost: bool,
}

/// What a chunk's scan found: the rows whose upper bound reached the floor of their kind
/// when they were scanned, with that bound, in row order; and the best `keep` lower
/// bounds of each kind. A row below a floor is below the threshold too (`part`).
struct Part {
    start: usize,
    upper: Vec<(usize, f64)>,
    best: [Vec<f64>; 2],
}

/// Gives back a taken chunk when its scan ends, or marks it lost when it unwinds.
struct Taken<'s, 'q> {
    scan: &'s Scan<'q>,
    part: Option<Part>,
}

impl Drop for Taken<'_, '_> {
    fn drop(&mut self) {
        // A poisoned lock means another chunk's bookkeeping panicked: its state is still
        // whole (every update is one assignment), so it is read as it is.
        let mut state = self.scan.state.lock().unwrap_or_else(|e| e.into_inner());
        match self.part.take() {
            Some(part) => state.parts.push(part),
            None => state.lost = true,
        }
        state.active -= 1;
        self.scan.finished.notify_all();
    }
}

impl Scan<'_> {
    /// Scans chunks until none is left to take. Each chunk starts from the floor of the
    /// chunks this thread scanned before (`part`).
    pub(super) fn help(&self) {
        let mut floor = [f64::NEG_INFINITY; 2];
        while let Some((rows, mut taken)) = self.take() {
            taken.part = Some(self.part(rows, &mut floor));
        }
    }

    /// The next chunk's rows, taken until the guard is dropped; `None` when every
    /// chunk is taken.
    fn take(&self) -> Option<(Range<usize>, Taken<'_, '_>)> {
        let chunk = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.next >= self.chunks {
                return None;
            }
            state.next += 1;
            state.active += 1;
            state.next - 1
        };
        let rows = self.quantized.scales.len();
        let range = chunk * CHUNK_ROWS..((chunk + 1) * CHUNK_ROWS).min(rows);
        Some((
            range,
            Taken {
                scan: self,
                part: None,
            },
        ))
    }

    /// Scans `rows`. `carried` is, per kind, the `keep`-th best lower bound of a chunk
    /// scanned before (−∞ at first), raised to this chunk's when it has `keep` rows above
    /// it. A row whose lower bound does not exceed it is not among this chunk's best: the
    /// earlier chunk's `keep` bounds at or above it, in its part, keep the threshold where
    /// it would be (`candidates`), and most rows of the later chunks touch no heap.
    fn part(&self, rows: Range<usize>, carried: &mut [f64; 2]) -> Part {
        let quantized = self.quantized;
        let query = &self.query;
        let mut upper = Vec::new();
        let mut heaps: [BinaryHeap<Reverse<Bound>>; 2] = Default::default();
        let start_floor = *carried;
        let mut floor = start_floor;
        let start = rows.start;
        let codes = &quantized.codes[start * quantized.dim..rows.end * quantized.dim];
        let mut dots = Vec::with_capacity(rows.len());
        let sums = &quantized.sums[rows.clone()];
        Dot::detect().of_rows(codes, quantized.dim, query, sums, &mut dots);
        for (row, exact) in rows.zip(dots) {
            let scale = f64::from(quantized.scales[row]);
            let approx = scale * query.scale * f64::from(exact);
            // |r·q − r̂·q̂| ≤ |(r − r̂)·q| + |r̂·(q − q̂)| ≤ (s_r/2)‖q‖₁ + (s_q/2)‖r̂‖₁
            let error =
                scale / 2.0 * query.l1 + query.scale / 2.0 * f64::from(quantized.l1[row]) + SLOP;
            let lower = approx - error;
            let kind = usize::from(quantized.second[row]);
            let heap = &mut heaps[kind];
            // Until a floor is known, the first `keep` rows fill the heap whatever they are.
            let admitted = lower > floor[kind]
                || (heap.len() < self.keep && start_floor[kind] == f64::NEG_INFINITY);
            if self.keep > 0 && admitted {
                heap.push(Reverse(Bound(lower)));
                if heap.len() > self.keep {
                    heap.pop();
                }
                if heap.len() == self.keep
                    && let Some(Reverse(Bound(least))) = heap.peek()
                {
                    floor[kind] = *least;
                }
            }
            // A floor has `keep` lower bounds at or above it among the parts' best, so the
            // threshold (`candidates`) is at least the floor: a row under it is not kept.
            if approx + error >= floor[kind] {
                upper.push((row, approx + error));
            }
        }
        for (kind, heap) in heaps.iter().enumerate() {
            if heap.len() == self.keep {
                carried[kind] = floor[kind];
            }
        }
        let best = heaps.map(|heap| heap.into_iter().map(|Reverse(Bound(b))| b).collect());
        Part { start, upper, best }
    }

    /// Helps until every chunk is taken, waits for the other helpers, and answers: the
    /// rows (in row order) that may be among the best `keep` of their kind. Err when a
    /// helper's chunk was lost to a panic.
    pub(super) fn candidates(&self) -> Result<Vec<usize>, String> {
        self.help();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.active > 0 {
            state = self.finished.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.lost {
            return Err("a share of the vector scan panicked".into());
        }
        let parts = &mut state.parts;
        parts.sort_by_key(|part| part.start);
        let mut threshold = [f64::NEG_INFINITY; 2];
        for (kind, threshold) in threshold.iter_mut().enumerate() {
            if self.keep > 0 && self.quantized.per_kind[kind] > self.keep {
                // The best `keep` of the kind are among the chunks' best `keep`.
                let mut lower: Vec<f64> = parts
                    .iter()
                    .flat_map(|p| p.best[kind].iter().copied())
                    .collect();
                let (_, kth, _) =
                    lower.select_nth_unstable_by(self.keep - 1, |a, b| b.total_cmp(a));
                *threshold = *kth;
            }
        }
        let second = &self.quantized.second;
        Ok(parts
            .iter()
            .flat_map(|part| part.upper.iter().copied())
            .filter(|&(row, upper)| upper >= threshold[usize::from(second[row])])
            .map(|(row, _)| row)
            .collect())
    }
}

/// How this CPU multiplies a row by the query: the integer dot product, exact either way.
#[derive(Clone, Copy)]
enum Dot {
    /// AVX-512 VNNI: 64 unsigned-by-signed byte products summed in four per instruction,
    /// on the query's codes biased by +128; the bias is taken off with the row's sum.
    Vnni,
    /// AVX2, or the baseline's SSE2: 16-bit multiply-adds (`dot_i8_lanes`).
    Lanes,
}

impl Dot {
    fn detect() -> Dot {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
        {
            return Dot::Vnni;
        }
        Dot::Lanes
    }

    /// `row · query.codes`; `row_sum` is `Σ row[i]`.
    #[inline]
    fn of(self, row: &[i8], query: &Query, row_sum: i32) -> i32 {
        match self {
            #[cfg(target_arch = "x86_64")]
            Dot::Vnni => {
                // SAFETY: `Vnni` is only detected on a CPU with these features.
                let biased = unsafe { dot_biased_vnni(row, &query.biased) };
                biased - 128 * row_sum
            }
            #[cfg(not(target_arch = "x86_64"))]
            Dot::Vnni => dot_i8(row, &query.codes),
            Dot::Lanes => dot_i8(row, &query.codes),
        }
    }

    /// `row · query.codes` for each row of `dim` codes laid end to end in `codes`
    /// (`sums[r]` = `Σ row_r[i]`), appended to `out`.
    fn of_rows(self, codes: &[i8], dim: usize, query: &Query, sums: &[i32], out: &mut Vec<i32>) {
        #[cfg(target_arch = "x86_64")]
        if let Dot::Vnni = self
            && dim == 256
            && query.biased.len() == 256
        {
            let start = out.len();
            // SAFETY: `Vnni` is only detected on a CPU with these features.
            unsafe { dots_biased_vnni_256(codes, &query.biased, out) };
            for (dot, sum) in out[start..].iter_mut().zip(sums) {
                *dot -= 128 * sum;
            }
            return;
        }
        out.extend(
            codes
                .chunks_exact(dim)
                .zip(sums)
                .map(|(row, &sum)| self.of(row, query, sum)),
        );
    }
}

/// `Σ biased[i] × row[i]` for each row of 256 codes in `codes`, with AVX-512 VNNI: the
/// query stays in four registers and four rows go at once, so their loads and their
/// chains of multiply-adds overlap (one row at a time waits on each).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn dots_biased_vnni_256(codes: &[i8], biased: &[u8], out: &mut Vec<i32>) {
    use std::arch::x86_64::{
        __m512i, _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_reduce_add_epi32,
        _mm512_setzero_si512,
    };
    let (query, _) = biased.as_chunks::<64>();
    assert!(query.len() >= 4, "a query of 256 codes");
    // SAFETY (every load below): each is of 64 readable bytes, unaligned.
    let load = |bytes: &[u8; 64]| unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) };
    let q: [__m512i; 4] = [
        load(&query[0]),
        load(&query[1]),
        load(&query[2]),
        load(&query[3]),
    ];
    let row_load = |bytes: &[i8; 64]| unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) };
    let (rows, _) = codes.as_chunks::<256>();
    let (fours, rest) = rows.as_chunks::<4>();
    out.reserve(rows.len());
    for four in fours {
        let mut acc = [_mm512_setzero_si512(); 4];
        for (k, q) in q.iter().enumerate() {
            for (acc, row) in acc.iter_mut().zip(four) {
                let (chunks, _) = row.as_chunks::<64>();
                *acc = _mm512_dpbusd_epi32(*acc, *q, row_load(&chunks[k]));
            }
        }
        out.extend(acc.map(|acc| _mm512_reduce_add_epi32(acc)));
    }
    for row in rest {
        let (chunks, _) = row.as_chunks::<64>();
        let mut acc = _mm512_setzero_si512();
        for (q, chunk) in q.iter().zip(chunks) {
            acc = _mm512_dpbusd_epi32(acc, *q, row_load(chunk));
        }
        out.push(_mm512_reduce_add_epi32(acc));
    }
}

/// `Σ biased[i] × row[i]` with AVX-512 VNNI, the tail past the last 64 bytes by scalars.
/// Exact: 256 × 255 × 127 is far from `i32`'s range.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn dot_biased_vnni(row: &[i8], biased: &[u8]) -> i32 {
    use std::arch::x86_64::{
        _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_reduce_add_epi32, _mm512_setzero_si512,
    };
    let (row_chunks, row_rest) = row.as_chunks::<64>();
    let (query_chunks, query_rest) = biased.as_chunks::<64>();
    let mut sum = _mm512_setzero_si512();
    for (r, q) in row_chunks.iter().zip(query_chunks) {
        // SAFETY: each chunk is 64 readable bytes; the loads are unaligned.
        let (r, q) = unsafe {
            (
                _mm512_loadu_si512(r.as_ptr().cast()),
                _mm512_loadu_si512(q.as_ptr().cast()),
            )
        };
        sum = _mm512_dpbusd_epi32(sum, q, r);
    }
    let tail: i32 = row_rest
        .iter()
        .zip(query_rest)
        .map(|(&r, &q)| i32::from(r) * i32::from(q))
        .sum();
    _mm512_reduce_add_epi32(sum) + tail
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
        Quantized::build(
            rows,
            dim,
            |r| payload.get(r * width..(r + 1) * width),
            |r| r.is_multiple_of(7),
        )
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
        // 256: the model's width, which has its own multiply (`Dot::of_rows`).
        for dim in [64, 256] {
            kept_rows_hold_the_exact_best(dim);
        }
    }

    fn kept_rows_hold_the_exact_best(dim: usize) {
        // Several chunks: later ones start from an earlier one's floor.
        let rows = unit_rows(CHUNK_ROWS * 3 + 500, dim, 0x9e37_79b9);
        let quantized = from_payload(&payload(&rows), rows.len(), dim).unwrap();
        let queries = unit_rows(40, dim, 0x1234_5678);
        let second = |row: usize| row.is_multiple_of(7);
        for (i, q) in queries.iter().chain(rows.iter().take(10)).enumerate() {
            for keep in [1, 10, 50] {
                let kept = quantized.candidates(q, keep);
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
    fn helpers_sharing_a_scan_keep_what_one_thread_keeps() {
        let dim = 32;
        // Several chunks, the last one short.
        let rows = unit_rows(CHUNK_ROWS * 3 + 100, dim, 0xfeed);
        let quantized = from_payload(&payload(&rows), rows.len(), dim).unwrap();
        for q in unit_rows(6, dim, 0xbeef).iter() {
            let alone = quantized.candidates(q, 10);
            let scan = quantized.scan(q, 10);
            let shared = std::thread::scope(|s| {
                let helper = s.spawn(|| scan.help());
                let kept = scan.candidates().unwrap();
                helper.join().unwrap();
                kept
            });
            assert_eq!(shared, alone);
            assert!(!alone.is_empty() && alone.len() < rows.len());
        }
    }

    #[test]
    fn later_chunks_hold_only_rows_above_an_earlier_chunks_floor() {
        let dim = 32;
        let chunks = 4;
        let rows = unit_rows(CHUNK_ROWS * chunks, dim, 0xabcd);
        let quantized = from_payload(&payload(&rows), rows.len(), dim).unwrap();
        let keep = 20;
        let scan = quantized.scan(&unit_rows(1, dim, 0x5eed)[0], keep);
        let kept = scan.candidates().unwrap();
        assert!(!kept.is_empty());
        let state = scan.state.lock().unwrap();
        let held = |part: &Part| part.best[0].len() + part.best[1].len();
        // The first chunk fills both kinds' heaps; the others start from its floor.
        let first = state.parts.iter().find(|p| p.start == 0).map(held);
        assert_eq!(first, Some(2 * keep));
        let all: usize = state.parts.iter().map(held).sum();
        assert!(all < chunks * 2 * keep, "held {all} bounds");
    }

    #[test]
    fn a_chunk_lost_to_a_panic_fails_the_scan_instead_of_hanging_it() {
        let dim = 16;
        let rows = unit_rows(CHUNK_ROWS + 10, dim, 3);
        let quantized = from_payload(&payload(&rows), rows.len(), dim).unwrap();
        let scan = quantized.scan(&rows[0], 5);
        // A helper takes a chunk and unwinds before giving its part back.
        let (_, taken) = scan.take().unwrap();
        drop(taken);
        let error = scan.candidates().unwrap_err();
        assert!(error.contains("panicked"), "{error}");
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

    /// Deterministic codes in -127..=127 (xorshift from `seed`).
    fn random_codes(seed: u64) -> impl FnMut() -> i8 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state % 255) as i32 - 127) as i8
        }
    }

    /// A query of integer codes at scale 1, as `Dot` reads one.
    fn query_of(codes: Vec<i8>) -> Query {
        Query {
            biased: codes.iter().map(|&c| (i16::from(c) + 128) as u8).collect(),
            codes,
            scale: 1.0,
            l1: 0.0,
        }
    }

    /// Every way this CPU can multiply gives the scalar product, extremes and tails too.
    #[test]
    fn each_dot_product_is_the_exact_integer_sum() {
        let mut next = random_codes(0x2545_f491_4f6c_dd1d);
        for dim in [16, 64, 100, 256, 300] {
            for round in 0..50 {
                let (row, query): (Vec<i8>, Vec<i8>) = match round {
                    0 => (vec![127; dim], vec![127; dim]),
                    1 => (vec![-127; dim], vec![127; dim]),
                    2 => (vec![127; dim], vec![-127; dim]),
                    _ => (0..dim).map(|_| (next(), next())).unzip(),
                };
                let scalar: i32 = row
                    .iter()
                    .zip(&query)
                    .map(|(&r, &q)| i32::from(r) * i32::from(q))
                    .sum();
                let query = query_of(query);
                let sum = row.iter().map(|&c| i32::from(c)).sum();
                assert_eq!(Dot::Lanes.of(&row, &query, sum), scalar, "lanes, dim {dim}");
                assert_eq!(
                    Dot::detect().of(&row, &query, sum),
                    scalar,
                    "detected, dim {dim}"
                );
            }
        }
    }

    /// A chunk's rows multiplied at once (four at a time where the CPU allows) give each
    /// row's scalar product, whatever the count of rows and the width.
    #[test]
    fn rows_multiplied_together_give_each_rows_exact_sum() {
        let mut next = random_codes(0x9e37_79b9_7f4a_7c15);
        for dim in [64, 100, 256] {
            for rows in [0, 1, 3, 4, 5, 11] {
                let codes: Vec<i8> = (0..rows * dim).map(|_| next()).collect();
                let mut query: Vec<i8> = (0..dim).map(|_| next()).collect();
                if rows == 11 {
                    query.fill(-127);
                }
                let scalar: Vec<i32> = codes
                    .chunks_exact(dim)
                    .map(|row| {
                        row.iter()
                            .zip(&query)
                            .map(|(&r, &q)| i32::from(r) * i32::from(q))
                            .sum()
                    })
                    .collect();
                let sums: Vec<i32> = codes
                    .chunks_exact(dim)
                    .map(|row| row.iter().map(|&c| i32::from(c)).sum())
                    .collect();
                let query = query_of(query);
                for dot in [Dot::Lanes, Dot::detect()] {
                    let mut out = vec![7];
                    dot.of_rows(&codes, dim, &query, &sums, &mut out);
                    assert_eq!(out[0], 7, "appended");
                    assert_eq!(out[1..], scalar, "dim {dim}, rows {rows}");
                }
            }
        }
    }

    #[test]
    fn a_zero_query_keeps_every_row() {
        let dim = 16;
        let rows = unit_rows(50, dim, 99);
        let quantized = from_payload(&payload(&rows), rows.len(), dim).unwrap();
        let kept = quantized.candidates(&vec![0.0; dim], 5);
        assert_eq!(kept.len(), rows.len());
    }
}
