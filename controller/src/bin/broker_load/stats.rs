//! Latency samples and the figures the load tool prints from them.
//!
//! Owns the arithmetic only (nearest-rank percentiles over every sample,
//! milliseconds); it must not time anything or talk to a controller.

/// Every latency sample of one request kind, in milliseconds.
#[derive(Debug, Default, Clone)]
pub struct Latencies {
    samples_ms: Vec<f64>,
}

impl Latencies {
    /// Adds one sample, ms.
    pub fn record(&mut self, ms: f64) {
        self.samples_ms.push(ms);
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Latencies) {
        self.samples_ms.extend_from_slice(&other.samples_ms);
    }

    /// How many samples there are.
    pub fn len(&self) -> usize {
        self.samples_ms.len()
    }

    /// The `q`-th percentile (0 < q <= 100) by nearest rank: the smallest
    /// sample with at least `q`% of the samples at or below it, ms; `None`
    /// when there is no sample.
    pub fn percentile(&self, q: f64) -> Option<f64> {
        if self.samples_ms.is_empty() {
            return None;
        }
        let mut sorted = self.samples_ms.clone();
        sorted.sort_by(f64::total_cmp);
        // 99.9 / 100 * 1000 is 999.0000000000001 in binary floating point:
        // a rank within 1e-9 of a whole number is that number.
        let rank = (q / 100.0 * sorted.len() as f64 - 1e-9).ceil() as usize;
        Some(sorted[rank.clamp(1, sorted.len()) - 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(samples: &[f64]) -> Latencies {
        let mut l = Latencies::default();
        for s in samples {
            l.record(*s);
        }
        l
    }

    #[test]
    fn a_percentile_is_the_nearest_rank_sample_whatever_the_order_of_recording() {
        let l = of(&[9.0, 1.0, 5.0, 3.0, 7.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(l.percentile(50.0), Some(5.0));
        assert_eq!(l.percentile(99.0), Some(10.0));
        assert_eq!(l.percentile(10.0), Some(1.0));
    }

    #[test]
    fn the_p99_9_of_a_thousand_samples_is_the_999th_not_the_largest() {
        let l = of(&(1..=1000).map(f64::from).collect::<Vec<_>>());
        assert_eq!(l.percentile(99.9), Some(999.0));
        assert_eq!(l.percentile(99.0), Some(990.0));
    }

    #[test]
    fn no_samples_have_no_percentile() {
        assert_eq!(Latencies::default().percentile(50.0), None);
    }
}
