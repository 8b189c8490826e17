//! Replica placement: Kafka's `StripedReplicaPlacer`, ported step by step.
//!
//! Brokers not in controlled shutdown are usable (Kafka's
//! `ClusterControlManager.usableBrokers`); they are grouped by rack (no rack
//! is a rack of its own, sorted first), each rack holding an unfenced and a
//! fenced list sorted by id with a random offset. Each partition's leader is
//! the next unfenced broker of the rack at the list's offset (racks tried in
//! turn); its followers come from the following racks in turn, unfenced
//! before fenced, so replicas spread over racks and leaders over brokers.
//! After as many partitions as unfenced brokers, racks and lists are
//! shuffled so the same assignments are not repeated. The random source is
//! the caller's (Kafka's `Random`; the draws differ, the algorithm is the
//! same).
//!
//! Owns the placement only; it must not read or write records.

use rand::{Rng, seq::SliceRandom};

/// One usable broker (Kafka's `UsableBroker`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsableBroker {
    /// Broker id.
    pub id: i32,
    /// Rack, if any.
    pub rack: Option<String>,
    /// Whether it is fenced (placed only when unfenced ones do not suffice).
    pub fenced: bool,
}

#[derive(Debug, Default)]
struct BrokerList {
    brokers: Vec<i32>,
    index: usize,
    offset: usize,
    epoch: usize,
}

impl BrokerList {
    fn initialize<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        if !self.brokers.is_empty() {
            self.brokers.sort_unstable();
            self.offset = rng.random_range(0..self.brokers.len());
        }
    }

    fn next(&mut self, epoch: usize) -> Option<i32> {
        if self.brokers.is_empty() {
            return None;
        }
        if self.epoch != epoch {
            self.epoch = epoch;
            self.index = 0;
            self.offset = (self.offset + 1) % self.brokers.len();
        }
        if self.index >= self.brokers.len() {
            return None;
        }
        let broker = self.brokers[(self.index + self.offset) % self.brokers.len()];
        self.index += 1;
        Some(broker)
    }
}

#[derive(Debug, Default)]
struct Rack {
    fenced: BrokerList,
    unfenced: BrokerList,
}

impl Rack {
    fn next(&mut self, epoch: usize) -> Option<i32> {
        self.unfenced
            .next(epoch)
            .or_else(|| self.fenced.next(epoch))
    }
}

/// Kafka's `RackList`: the state of one placement run.
struct RackList<'r, R: Rng + ?Sized> {
    rng: &'r mut R,
    racks: Vec<(Option<String>, Rack)>,
    total: usize,
    unfenced: usize,
    epoch: usize,
    offset: usize,
}

/// Kafka's `InvalidReplicationFactorException` messages.
fn check(replication_factor: i32, total: usize, unfenced: usize) -> Result<(), String> {
    if replication_factor <= 0 {
        return Err(format!(
            "Invalid replication factor {replication_factor}: the replication factor must be positive."
        ));
    }
    if unfenced == 0 {
        return Err("All brokers are currently fenced.".into());
    }
    if replication_factor as usize > total {
        return Err(format!(
            "The target replication factor of {replication_factor} cannot be reached because only {total} broker(s) are registered or some brokers have all their log directories cordoned."
        ));
    }
    Ok(())
}

impl<'r, R: Rng + ?Sized> RackList<'r, R> {
    fn new(rng: &'r mut R, brokers: &[UsableBroker]) -> Self {
        let mut racks: Vec<(Option<String>, Rack)> = Vec::new();
        let (mut total, mut unfenced) = (0, 0);
        for b in brokers {
            let i = match racks.iter().position(|(name, _)| *name == b.rack) {
                Some(i) => i,
                None => {
                    racks.push((b.rack.clone(), Rack::default()));
                    racks.len() - 1
                }
            };
            if b.fenced {
                racks[i].1.fenced.brokers.push(b.id);
            } else {
                unfenced += 1;
                racks[i].1.unfenced.brokers.push(b.id);
            }
            total += 1;
        }
        for (_, rack) in &mut racks {
            rack.fenced.initialize(rng);
            rack.unfenced.initialize(rng);
        }
        // Kafka's OptionalStringComparator: no rack first, then by name.
        racks.sort_by(|a, b| a.0.cmp(&b.0));
        let offset = if racks.is_empty() {
            0
        } else {
            rng.random_range(0..racks.len())
        };
        Self {
            rng,
            racks,
            total,
            unfenced,
            epoch: 0,
            offset,
        }
    }

    fn shuffle(&mut self) {
        self.racks.shuffle(self.rng);
        for (_, rack) in &mut self.racks {
            rack.fenced.brokers.shuffle(self.rng);
            rack.unfenced.brokers.shuffle(self.rng);
        }
    }

    fn place(&mut self, replication_factor: i32) -> Result<Vec<i32>, String> {
        check(replication_factor, self.total, self.unfenced)?;
        if self.epoch == self.unfenced && self.unfenced > 1 {
            self.shuffle();
            self.epoch = 0;
        }
        if self.offset == self.racks.len() {
            self.offset = 0;
        }
        let n = self.racks.len();
        let mut brokers = Vec::with_capacity(replication_factor as usize);
        let mut index = self.offset;
        // At least one rack has an unfenced broker left at this epoch
        // (`check` and the epoch reset guarantee it); bound the loop anyway.
        for _ in 0..n * 2 {
            if let Some(b) = self.racks[index].1.unfenced.next(self.epoch) {
                brokers.push(b);
                break;
            }
            index = (index + 1) % n;
        }
        if brokers.is_empty() {
            return Err("All brokers are currently fenced.".into());
        }
        let mut first_rack = Some(index);
        let mut rack_index = self.offset;
        for _ in 1..replication_factor {
            let mut result = None;
            let mut tries = 0;
            while result.is_none() {
                if Some(rack_index) == first_rack {
                    first_rack = None;
                } else {
                    result = self.racks[rack_index].1.next(self.epoch);
                }
                rack_index = (rack_index + 1) % n;
                tries += 1;
                if tries > 2 * n + 2 {
                    return Err(format!(
                        "The target replication factor of {replication_factor} cannot be reached because only {} broker(s) are registered or some brokers have all their log directories cordoned.",
                        self.total
                    ));
                }
            }
            if let Some(b) = result {
                brokers.push(b);
            }
        }
        self.epoch += 1;
        self.offset += 1;
        Ok(brokers)
    }
}

/// Places `num_partitions` partitions of `replication_factor` replicas
/// over `brokers` (Kafka's `StripedReplicaPlacer.place`): one replica list
/// per partition, the leader first.
///
/// Errors: Kafka's `InvalidReplicationFactorException` message for a
/// factor not positive, no unfenced broker, or more replicas than brokers.
pub fn place<R: Rng + ?Sized>(
    rng: &mut R,
    brokers: &[UsableBroker],
    num_partitions: i32,
    replication_factor: i32,
) -> Result<Vec<Vec<i32>>, String> {
    let mut list = RackList::new(rng, brokers);
    check(replication_factor, list.total, list.unfenced)?;
    (0..num_partitions.max(0))
        .map(|_| list.place(replication_factor))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use rand::SeedableRng;

    use super::*;

    fn brokers(racks: &[(i32, Option<&str>, bool)]) -> Vec<UsableBroker> {
        racks
            .iter()
            .map(|(id, rack, fenced)| UsableBroker {
                id: *id,
                rack: rack.map(str::to_owned),
                fenced: *fenced,
            })
            .collect()
    }

    #[test]
    fn leaders_spread_over_brokers_and_replicas_are_distinct() {
        for seed in 0..20 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let b = brokers(&[(1, None, false), (2, None, false), (3, None, false)]);
            let placed = place(&mut rng, &b, 6, 3).expect("placed");
            assert_eq!(placed.len(), 6);
            let mut leaders: BTreeMap<i32, usize> = BTreeMap::new();
            for replicas in &placed {
                assert_eq!(
                    replicas.iter().collect::<BTreeSet<_>>().len(),
                    3,
                    "{replicas:?}"
                );
                *leaders.entry(replicas[0]).or_default() += 1;
            }
            assert_eq!(
                leaders.values().copied().collect::<Vec<_>>(),
                vec![2, 2, 2],
                "seed {seed}: {placed:?}"
            );
        }
    }

    #[test]
    fn replicas_spread_over_racks() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let b = brokers(&[
            (1, Some("a"), false),
            (2, Some("a"), false),
            (3, Some("b"), false),
            (4, Some("b"), false),
        ]);
        let rack = |id: i32| if id <= 2 { "a" } else { "b" };
        for replicas in place(&mut rng, &b, 8, 2).expect("placed") {
            assert_ne!(rack(replicas[0]), rack(replicas[1]), "{replicas:?}");
        }
    }

    #[test]
    fn fenced_brokers_never_lead_and_are_used_only_when_needed() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let b = brokers(&[(1, None, false), (2, None, true), (3, None, false)]);
        for replicas in place(&mut rng, &b, 6, 2).expect("placed") {
            assert_ne!(replicas[0], 2);
            assert!(!replicas.contains(&2), "{replicas:?}");
        }
        for replicas in place(&mut rng, &b, 6, 3).expect("placed") {
            assert_ne!(replicas[0], 2, "{replicas:?}");
        }
    }

    #[test]
    fn too_few_brokers_or_none_unfenced_are_kafkas_errors() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let b = brokers(&[(1, None, false), (2, None, false), (3, None, false)]);
        assert_eq!(
            place(&mut rng, &b, 1, 4),
            Err("The target replication factor of 4 cannot be reached because only 3 broker(s) are registered or some brokers have all their log directories cordoned.".into())
        );
        let fenced = brokers(&[(1, None, true)]);
        assert_eq!(
            place(&mut rng, &fenced, 1, 1),
            Err("All brokers are currently fenced.".into())
        );
        assert_eq!(
            place(&mut rng, &b, 1, 0),
            Err("Invalid replication factor 0: the replication factor must be positive.".into())
        );
    }
}
