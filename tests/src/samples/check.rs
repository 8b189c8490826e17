//! The checks on a recording (run.sh's `samples.py check-one-quorum` and
//! `check-roll`): pure functions of the samples, `Ok` with a one-line
//! summary to print, `Err` with the reason the check failed, naming the
//! sample or the node it is about. Must not do I/O.

use std::collections::{BTreeMap, BTreeSet};

use super::{PodSample, Sample};

/// No second quorum was ever formed (`check-one-quorum`): at least 10
/// samples saw a controller; every volume holds `cluster_id` and at least
/// `min_nodes` volumes were read; at least `min_nodes` nodes answered; one
/// sample had `min_nodes` controllers agreeing on one leader and epoch; and
/// across every view (counted once the same node reported it twice, since
/// a scrape may pair a new epoch with the old leader) one leader per epoch.
/// `Ok` with a summary, `Err` with the reason.
pub fn check_one_quorum(
    samples: &[Sample],
    cluster_id: &str,
    min_nodes: usize,
) -> Result<String, String> {
    let viewed = samples.iter().filter(|s| !s.views.is_empty()).count();
    if viewed < 10 {
        return Err(format!(
            "only {viewed} samples saw a controller; nothing was observed"
        ));
    }
    let mut ids: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in samples {
        for (pvc, cid) in &s.volumes {
            ids.entry(cid.as_str()).or_default().insert(pvc.as_str());
        }
    }
    if ids.keys().copied().collect::<Vec<_>>() != [cluster_id] {
        return Err(format!(
            "volumes hold cluster ids {ids:?}, want only {cluster_id}"
        ));
    }
    let volumes = &ids[cluster_id];
    if volumes.len() < min_nodes {
        return Err(format!(
            "only volumes {volumes:?} were read, want {min_nodes}"
        ));
    }
    let mut seen: BTreeMap<(i64, i64, i64), Vec<f64>> = BTreeMap::new();
    let mut nodes = BTreeSet::new();
    let mut agreed = false;
    for s in samples {
        let mut pairs = BTreeSet::new();
        for (node, v) in &s.views {
            nodes.insert(*node);
            let leader = v.leader_for(*node);
            if leader >= 0 {
                seen.entry((*node, v.epoch, leader)).or_default().push(s.t);
                pairs.insert((v.epoch, leader));
            }
        }
        if s.views.len() >= min_nodes && pairs.len() == 1 && s.views.values().all(|v| v.leader >= 0)
        {
            agreed = true;
        }
    }
    if nodes.len() < min_nodes {
        return Err(format!(
            "only nodes {nodes:?} answered /metrics, want {min_nodes}"
        ));
    }
    if !agreed {
        return Err(format!(
            "no sample where {min_nodes} controllers agreed on one leader and epoch"
        ));
    }
    let mut leaders: BTreeMap<i64, BTreeMap<i64, Vec<(i64, f64)>>> = BTreeMap::new();
    for ((node, epoch, leader), times) in &seen {
        if times.len() >= 2 {
            leaders
                .entry(*epoch)
                .or_default()
                .entry(*leader)
                .or_default()
                .push((*node, times[0]));
        }
    }
    for (epoch, by_leader) in &leaders {
        if by_leader.len() > 1 {
            return Err(format!(
                "epoch {epoch} has leaders {by_leader:?} (seen by node, at time)"
            ));
        }
    }
    let per_epoch: Vec<String> = leaders
        .iter()
        .filter_map(|(e, b)| Some(format!("{e}:{}", b.keys().next()?)))
        .collect();
    Ok(format!(
        "{} samples, nodes {nodes:?}, volumes {volumes:?} all of cluster {cluster_id}; leader per epoch: {}",
        samples.len(),
        per_epoch.join(", ")
    ))
}

/// The leader as the controllers with the highest epoch see it (their
/// `current_leader`), among the views that name one; `None` when no view
/// names a leader or those of the highest epoch disagree.
pub fn leader_of(sample: &Sample) -> Option<i64> {
    let views: Vec<_> = sample.views.values().filter(|v| v.leader >= 0).collect();
    let top = views.iter().map(|v| v.epoch).max()?;
    let named: BTreeSet<i64> = views
        .iter()
        .filter(|v| v.epoch == top)
        .map(|v| v.leader)
        .collect();
    match named.len() {
        1 => named.first().copied(),
        _ => None,
    }
}

/// The leader just before the restart of pod `o` seen at sample `i`: the
/// latest agreed leader ([`leader_of`]) in `samples[settled..i]`, the
/// stretch where every pod was up (the previous restarted pod was back). The
/// sample right before a restart may already be inside it: the pod listing
/// shows the pod not yet deleting, then the scrape meets its controller
/// shutting down (a leader resigning), so the views disagree; an earlier
/// sample of the same stretch says who led when the restart began.
///
/// When no sample of that stretch agreed (the operator moved on within one
/// sample of the previous pod coming back, and that sample already met the
/// leader resigning), the samples from the previous restart (`since`) on
/// are asked, but only to confirm that `o` itself led: a leader they name
/// other than `o` may have lost an election nobody sampled, so it proves
/// nothing. `None` when neither says.
fn leader_before(
    samples: &[Sample],
    i: usize,
    o: i64,
    settled: usize,
    since: usize,
) -> Option<i64> {
    let latest = |from: usize| samples.get(from..i)?.iter().rev().find_map(leader_of);
    latest(settled).or_else(|| latest(since).filter(|l| *l == o))
}

/// A quorum-aware rolling restart of `replicas` pods (`check-roll`): the
/// first sample has pods `0..replicas` all ready; in no sample is more than
/// one pod down (absent, deleting or not ready) nor fewer than a majority
/// ready; every pod ran as exactly two pods (uids), the first and its
/// replacement; in the last sample every pod is on one revision, none of
/// the first sample's; an agreed leader was seen before each restart, and
/// the pod restarted last is the one that led then, no earlier one.
/// `Ok` with a summary (the order, the leader before each restart, the
/// seconds from the first restart to the last sample), `Err` with the
/// reason.
pub fn check_roll(samples: &[Sample], replicas: usize) -> Result<String, String> {
    let ordinals: Vec<i64> = (0..replicas as i64).collect();
    let majority = replicas / 2 + 1;
    let first: Option<BTreeMap<i64, &PodSample>> = samples.first().and_then(|s| {
        ordinals
            .iter()
            .map(|o| Some((*o, s.pods.get(o).filter(|p| p.ready)?)))
            .collect()
    });
    let Some(first) = first else {
        return Err(format!(
            "the roll did not start from {replicas} ready pods: {:?}",
            samples.first().map(|s| &s.pods)
        ));
    };
    // (sample index, ordinal, leader just before)
    let mut restarts: Vec<(usize, i64, Option<i64>)> = Vec::new();
    let mut seen_uids: BTreeMap<i64, Vec<&str>> = first
        .iter()
        .map(|(o, p)| (*o, vec![p.uid.as_str()]))
        .collect();
    let mut started = BTreeSet::new();
    // ordinal -> first sample where its new pod was ready
    let mut back: BTreeMap<i64, usize> = BTreeMap::new();
    for (i, s) in samples.iter().enumerate() {
        // Restarts begin only once the previous restarted pod is back.
        let settled = started
            .iter()
            .filter_map(|o| back.get(o))
            .max()
            .copied()
            .unwrap_or(0);
        let since = restarts.last().map_or(0, |r| r.0);
        let mut down = Vec::new();
        for o in &ordinals {
            let p = s.pods.get(o);
            let first_uid = first[o].uid.as_str();
            if p.is_none_or(|p| p.deleting || !p.ready) {
                down.push(*o);
            }
            if let Some(p) = p {
                let uids = seen_uids.entry(*o).or_default();
                if !uids.contains(&p.uid.as_str()) {
                    uids.push(&p.uid);
                }
            }
            let changed = p.is_none_or(|p| p.deleting || p.uid != first_uid);
            if changed && started.insert(*o) {
                restarts.push((i, *o, leader_before(samples, i, *o, settled, since)));
            }
            if started.contains(o) && p.is_some_and(|p| p.ready && p.uid != first_uid) {
                back.entry(*o).or_insert(i);
            }
        }
        if down.len() > 1 {
            return Err(format!(
                "sample {i}: pods {down:?} down at once (one at a time expected)"
            ));
        }
        if replicas - down.len() < majority {
            return Err(format!(
                "sample {i}: only {} ready, majority is {majority}",
                replicas - down.len()
            ));
        }
    }
    for (o, uids) in &seen_uids {
        if uids.len() != 2 {
            return Err(format!(
                "pod {o} ran as {} pods {uids:?}, want restarted once",
                uids.len()
            ));
        }
    }
    let Some(last) = samples.last() else {
        return Err("no samples".into());
    };
    let was: BTreeSet<Option<&str>> = first.values().map(|p| p.revision.as_deref()).collect();
    let Some(now) = ordinals
        .iter()
        .map(|o| Some(last.pods.get(o)?.revision.as_deref()))
        .collect::<Option<BTreeSet<_>>>()
    else {
        return Err(format!(
            "the last sample lacks a pod of {ordinals:?}: {:?}",
            last.pods
        ));
    };
    if now.len() != 1 || !now.is_disjoint(&was) {
        return Err(format!("pods end on revisions {now:?}, from {was:?}"));
    }
    for (n, (i, o, leader)) in restarts.iter().enumerate() {
        let Some(leader) = leader else {
            return Err(format!(
                "no agreed leader in the samples before pod {o} restarted (sample {i})"
            ));
        };
        let is_last = n + 1 == restarts.len();
        if is_last && o != leader {
            return Err(format!(
                "the last pod restarted was {o}, but the leader then was {leader}"
            ));
        }
        if !is_last && o == leader {
            let after: Vec<i64> = restarts[n + 1..].iter().map(|r| r.1).collect();
            return Err(format!(
                "pod {o} restarted while it led, before pods {after:?}"
            ));
        }
    }
    let seconds = restarts
        .first()
        .and_then(|r| samples.get(r.0))
        .map_or(0.0, |s| last.t - s.t);
    let order: Vec<String> = restarts
        .iter()
        .map(|(_, o, l)| format!("{o} (leader then: {})", l.unwrap_or(-1)))
        .collect();
    Ok(format!(
        "{} samples; restarted {}; never more than one pod down, always >= {majority} ready; {seconds:.0} s",
        samples.len(),
        order.join(", ")
    ))
}

/// `rolls` quorum-aware rolling restarts of `replicas` pods in a row (a CA
/// rotation's two, `pki::rotation`): the first sample has pods
/// `0..replicas` all ready; in no sample is more than one pod down (absent,
/// deleting or not ready) nor fewer than a majority ready; every pod ran as
/// exactly `rolls + 1` pods (uids); the last sample has every pod ready.
/// The order within each roll is [`check_roll`]'s to judge (here the rolls
/// follow each other without a sample between them in which to tell them
/// apart). `Ok` with a summary, `Err` with the reason.
pub fn check_rolls(samples: &[Sample], replicas: usize, rolls: usize) -> Result<String, String> {
    let majority = replicas / 2 + 1;
    let ordinals: Vec<i64> = (0..replicas as i64).collect();
    let all_ready = |s: &Sample| {
        ordinals
            .iter()
            .all(|o| s.pods.get(o).is_some_and(|p| p.ready && !p.deleting))
    };
    match samples.first() {
        Some(s) if all_ready(s) => {}
        first => {
            return Err(format!(
                "the rolls did not start from {replicas} ready pods: {:?}",
                first.map(|s| &s.pods)
            ));
        }
    }
    let mut uids: BTreeMap<i64, BTreeSet<&str>> = BTreeMap::new();
    for (i, s) in samples.iter().enumerate() {
        let mut down = Vec::new();
        for o in &ordinals {
            match s.pods.get(o) {
                Some(p) => {
                    uids.entry(*o).or_default().insert(p.uid.as_str());
                    if !p.ready || p.deleting {
                        down.push(*o);
                    }
                }
                None => down.push(*o),
            }
        }
        if down.len() > 1 {
            return Err(format!(
                "sample {i}: pods {down:?} down at once (one at a time expected)"
            ));
        }
        if replicas - down.len() < majority {
            return Err(format!(
                "sample {i}: only {} ready, majority is {majority}",
                replicas - down.len()
            ));
        }
    }
    for o in &ordinals {
        let runs = uids.get(o).map_or(0, BTreeSet::len);
        if runs != rolls + 1 {
            return Err(format!(
                "pod {o} ran as {runs} pods, want {} ({rolls} restarts)",
                rolls + 1
            ));
        }
    }
    if !samples.last().is_some_and(all_ready) {
        return Err("the last sample does not have every pod ready".into());
    }
    Ok(format!(
        "{} samples; {rolls} restarts of each of {replicas} pods; never more than one pod down, always >= {majority} ready",
        samples.len()
    ))
}
