//! `--bandwidth`: a quick memory-bandwidth probe recorded in the manifest,
//! so roofline fractions can be read against what this machine can move.

use std::time::Instant;

/// Host memcpy bandwidth in GB/s (bytes read + written), best of a few
/// copies of a 64 MiB buffer: large enough to miss every CPU cache.
pub fn host_copy_gbs() -> f64 {
    const BYTES: usize = 64 << 20;
    let src = vec![1u8; BYTES];
    let mut dst = vec![0u8; BYTES];
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t0 = Instant::now();
        dst.copy_from_slice(&src);
        std::hint::black_box(&mut dst);
        best = best.min(t0.elapsed().as_secs_f64());
    }
    if best > 0.0 {
        2.0 * BYTES as f64 / best / 1e9
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn probe_is_positive_and_finite() {
        let gbs = super::host_copy_gbs();
        assert!(gbs.is_finite() && gbs > 0.0, "{gbs}");
    }
}
