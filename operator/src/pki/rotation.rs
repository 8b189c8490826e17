//! CA rotation of the operator's own CA (issue 20): the steps that replace
//! the CA a running quorum trusts without ever leaving two controllers that
//! do not trust each other, in the way cert-manager users rotate a CA with a
//! trust bundle (trust-manager): first every party trusts both CAs, then the
//! leaves are re-issued by the new CA, then the old CA leaves the bundle.
//!
//! | phase | signs leaves | trust bundle (`ca.crt`) | pod template `ca-hash` |
//! |---|---|---|---|
//! | [`Phase::Steady`] | A | A | h(A) |
//! | [`Phase::Trust`] | A | A + B | h(A)+h(B): a rolling restart |
//! | [`Phase::Reissue`] | B | A + B | h(B): a rolling restart |
//! | [`Phase::Steady`] | B | B | h(B): no restart |
//!
//! A phase moves on only once its rolling restart is done (every pod runs
//! the StatefulSet's template with that `ca-hash` and is ready): a pod
//! started after the Secrets were written has mounted them, so no
//! controller is left serving a leaf its peers do not trust. The restarts
//! are the planner's row 7 (one pod at a time, followers first, leader
//! last, only with a caught-up majority); the controllers would reload the
//! files on their own too, the restart is what proves they did. The last
//! step needs no restart: every leaf is B's already.
//!
//! A rotation starts when the CA is two thirds through its life
//! (cert-manager's renewal rule) or when the KraftQuorum's
//! `kraft.krabka.io/rotate-ca` annotation holds a value the CA Secret has
//! not rotated for yet. The record of a rotation (the phase, both CAs) is
//! the CA Secret itself, written before any leaf changes, so an operator
//! crash resumes where it stopped.
//!
//! Pure: owns the phases and their order; it must not read or write the
//! cluster (`controller::certs` does) and never shows key material.

use super::Issued;
use crate::build::fnv1a_hex;

/// Where a CA rotation stands; recorded on the CA Secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// No rotation: one CA signs and is trusted.
    Steady,
    /// The next CA is trusted beside the current one, which still signs.
    Trust,
    /// The new CA signs; the previous one is still trusted.
    Reissue,
}

impl Phase {
    /// The annotation value of the phase (`""` for [`Phase::Steady`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Steady => "",
            Phase::Trust => "trust",
            Phase::Reissue => "reissue",
        }
    }

    /// The phase an annotation value names; `None` for an unknown value.
    pub fn parse(value: &str) -> Option<Phase> {
        match value {
            "" => Some(Phase::Steady),
            "trust" => Some(Phase::Trust),
            "reissue" => Some(Phase::Reissue),
            _ => None,
        }
    }
}

/// The CAs of a quorum as its CA Secret records them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaRecord {
    /// The CA that signs leaves now (`ca.crt`, `ca.key`).
    pub signer: Issued,
    /// The CA that will sign next ([`Phase::Trust`] only).
    pub next: Option<Issued>,
    /// The certificate of the CA that signed before ([`Phase::Reissue`] only), PEM.
    pub previous_pem: Option<String>,
    /// Where the rotation stands.
    pub phase: Phase,
    /// The `kraft.krabka.io/rotate-ca` value the last requested rotation was for.
    pub rotated_for: Option<String>,
}

/// Why a rotation starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The CA is two thirds through its life (cert-manager's `renewBefore`).
    Expiring,
    /// The `kraft.krabka.io/rotate-ca` annotation asks for it (its value).
    Requested(String),
}

/// What to do with the CA in this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing: steady, or waiting for the phase's rolling restart.
    Keep,
    /// Make the next CA and trust it beside the current one.
    Start(Trigger),
    /// Sign with the next CA (every pod trusts it now).
    Reissue,
    /// Drop the previous CA from the bundle (every pod serves a new leaf).
    Finish,
}

impl Step {
    /// The step's name, an Event's `action` (one per step, so kube-rs does
    /// not fold the steps into one event series).
    pub fn action(&self) -> &'static str {
        match self {
            Step::Keep => "KeepCa",
            Step::Start(_) => "TrustNextCa",
            Step::Reissue => "ReissueLeaves",
            Step::Finish => "DropPreviousCa",
        }
    }

    /// What the step does, for an Event.
    pub fn note(&self) -> String {
        match self {
            Step::Keep => "no CA change".into(),
            Step::Start(Trigger::Expiring) => {
                "CA rotation started (the CA is two thirds through its life): both CAs trusted, \
                 pods restart one at a time"
                    .into()
            }
            Step::Start(Trigger::Requested(value)) => format!(
                "CA rotation started (rotate-ca {value:?}): both CAs trusted, pods restart one \
                 at a time"
            ),
            Step::Reissue => {
                "CA rotation: every pod trusts the new CA; leaves re-issued by it, pods restart \
                 one at a time"
                    .into()
            }
            Step::Finish => {
                "CA rotation done: every pod serves a leaf of the new CA; the old CA leaves the \
                 trust bundle"
                    .into()
            }
        }
    }
}

impl CaRecord {
    /// A record of one CA, no rotation.
    pub fn steady(signer: Issued) -> Self {
        Self {
            signer,
            next: None,
            previous_pem: None,
            phase: Phase::Steady,
            rotated_for: None,
        }
    }

    /// The fingerprint of the signing CA (a leaf Secret's `signed-by`).
    pub fn signer_hash(&self) -> String {
        fnv1a_hex(self.signer.cert_pem.as_bytes())
    }

    /// The trusted CAs, PEM, concatenated: the signer alone, or with the
    /// next ([`Phase::Trust`]) or previous ([`Phase::Reissue`]) CA.
    pub fn trust_bundle(&self) -> String {
        let mut pems = Vec::with_capacity(2);
        if let Some(previous) = &self.previous_pem {
            pems.push(previous.as_str());
        }
        pems.push(self.signer.cert_pem.as_str());
        if let Some(next) = &self.next {
            pems.push(next.cert_pem.as_str());
        }
        pems.iter()
            .map(|p| {
                if p.ends_with('\n') {
                    (*p).to_string()
                } else {
                    format!("{p}\n")
                }
            })
            .collect()
    }

    /// The pod template's `ca-hash` for this record: the signer's
    /// fingerprint, with the next CA's after a `+` in [`Phase::Trust`]. A
    /// change restarts the pods (planner row 7); a quorum that never
    /// rotated keeps the value operators before rotation wrote.
    pub fn template_hash(&self) -> String {
        match &self.next {
            Some(next) => format!(
                "{}+{}",
                self.signer_hash(),
                fnv1a_hex(next.cert_pem.as_bytes())
            ),
            None => self.signer_hash(),
        }
    }
}

/// The step for `record` at `now` (unix seconds), with the KraftQuorum's
/// `kraft.krabka.io/rotate-ca` value `requested` and `rolled`: whether
/// every pod runs a template with this record's
/// [`CaRecord::template_hash`] and is ready.
pub fn step(record: &CaRecord, now: i64, requested: Option<&str>, rolled: bool) -> Step {
    match record.phase {
        Phase::Steady => match requested {
            Some(r) if !r.is_empty() && record.rotated_for.as_deref() != Some(r) => {
                Step::Start(Trigger::Requested(r.to_string()))
            }
            _ if now >= record.signer.renew_after => Step::Start(Trigger::Expiring),
            _ => Step::Keep,
        },
        Phase::Trust if rolled && record.next.is_some() => Step::Reissue,
        Phase::Reissue if rolled => Step::Finish,
        Phase::Trust | Phase::Reissue => Step::Keep,
    }
}

/// The record after `step`; `next_ca` makes the new CA (called for
/// [`Step::Start`] only). `None` when the step does not apply to the
/// record's phase (nothing to change).
///
/// # Errors
/// What `next_ca` returns.
pub fn advance<E>(
    record: &CaRecord,
    step: &Step,
    next_ca: impl FnOnce() -> Result<Issued, E>,
) -> Result<Option<CaRecord>, E> {
    let mut r = record.clone();
    match (record.phase, step) {
        (Phase::Steady, Step::Start(trigger)) => {
            r.next = Some(next_ca()?);
            r.previous_pem = None;
            r.phase = Phase::Trust;
            if let Trigger::Requested(value) = trigger {
                r.rotated_for = Some(value.clone());
            }
        }
        (Phase::Trust, Step::Reissue) => {
            let Some(next) = r.next.take() else {
                return Ok(None);
            };
            r.previous_pem = Some(std::mem::replace(&mut r.signer, next).cert_pem);
            r.phase = Phase::Reissue;
        }
        (Phase::Reissue, Step::Finish) => {
            r.previous_pem = None;
            r.phase = Phase::Steady;
        }
        _ => return Ok(None),
    }
    Ok(Some(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(tag: &str, renew_after: i64) -> Issued {
        Issued {
            cert_pem: format!("-----CERT {tag}-----\n"),
            key_pem: format!("key {tag}"),
            not_before: 0,
            not_after: renew_after * 3 / 2,
            renew_after,
        }
    }

    fn rotating(phase: Phase) -> CaRecord {
        let mut r = CaRecord::steady(ca("A", 1000));
        match phase {
            Phase::Steady => {}
            Phase::Trust => r.next = Some(ca("B", 5000)),
            Phase::Reissue => {
                r.signer = ca("B", 5000);
                r.previous_pem = Some(ca("A", 1000).cert_pem);
            }
        }
        r.phase = phase;
        r
    }

    #[test]
    fn the_step_of_each_phase_follows_the_table() {
        let requested = |s: &str| Step::Start(Trigger::Requested(s.to_string()));
        let mut done = rotating(Phase::Steady);
        done.rotated_for = Some("one".into());
        // (record, now, rotate-ca, rolled) -> step
        let table = [
            (rotating(Phase::Steady), 999, None, true, Step::Keep),
            (
                rotating(Phase::Steady),
                1000,
                None,
                true,
                Step::Start(Trigger::Expiring),
            ),
            (
                rotating(Phase::Steady),
                0,
                Some("one"),
                true,
                requested("one"),
            ),
            (rotating(Phase::Steady), 0, Some(""), true, Step::Keep),
            (done.clone(), 0, Some("one"), true, Step::Keep),
            (done, 0, Some("two"), false, requested("two")),
            (rotating(Phase::Trust), 0, None, false, Step::Keep),
            // A rotation in flight is never restarted by expiry or a request.
            (rotating(Phase::Trust), 9999, Some("x"), false, Step::Keep),
            (rotating(Phase::Trust), 0, None, true, Step::Reissue),
            (rotating(Phase::Reissue), 0, None, false, Step::Keep),
            (rotating(Phase::Reissue), 0, None, true, Step::Finish),
        ];
        for (i, (record, now, req, rolled, want)) in table.into_iter().enumerate() {
            assert_eq!(step(&record, now, req, rolled), want, "row {i}");
        }
    }

    #[test]
    fn a_rotation_trusts_both_cas_before_the_new_one_signs_and_drops_the_old_last() {
        let start = rotating(Phase::Steady);
        let (a, b) = (ca("A", 1000), ca("B", 5000));
        let h = |i: &Issued| fnv1a_hex(i.cert_pem.as_bytes());
        assert_eq!(start.trust_bundle(), a.cert_pem);
        assert_eq!(start.template_hash(), h(&a));

        let step1 = Step::Start(Trigger::Requested("r1".into()));
        let trust = advance(&start, &step1, || Ok::<_, ()>(b.clone()))
            .expect("made")
            .expect("applies");
        assert_eq!(trust.phase, Phase::Trust);
        assert_eq!(trust.signer, a, "the old CA still signs");
        assert_eq!(
            trust.trust_bundle(),
            format!("{}{}", a.cert_pem, b.cert_pem)
        );
        assert_eq!(trust.template_hash(), format!("{}+{}", h(&a), h(&b)));
        assert_eq!(trust.rotated_for.as_deref(), Some("r1"));

        let reissue = advance(&trust, &Step::Reissue, || Err(()))
            .expect("no CA made")
            .expect("applies");
        assert_eq!(reissue.phase, Phase::Reissue);
        assert_eq!(reissue.signer, b, "the new CA signs");
        assert_eq!(
            reissue.trust_bundle(),
            format!("{}{}", a.cert_pem, b.cert_pem)
        );
        assert_eq!(reissue.template_hash(), h(&b));

        let done = advance(&reissue, &Step::Finish, || Err(()))
            .expect("no CA made")
            .expect("applies");
        assert_eq!(done.phase, Phase::Steady);
        assert_eq!(done.trust_bundle(), b.cert_pem);
        // Dropping the old CA restarts nothing: every leaf is B's already.
        assert_eq!(done.template_hash(), reissue.template_hash());
        assert_eq!(done.rotated_for.as_deref(), Some("r1"));
    }

    #[test]
    fn a_step_of_another_phase_changes_nothing() {
        let never = || -> Result<Issued, ()> { panic!("no CA is made") };
        for (phase, step) in [
            (Phase::Steady, Step::Reissue),
            (Phase::Steady, Step::Finish),
            (Phase::Trust, Step::Finish),
            (Phase::Reissue, Step::Reissue),
            (Phase::Steady, Step::Keep),
        ] {
            assert_eq!(
                advance(&rotating(phase), &step, never),
                Ok(None),
                "{phase:?}"
            );
        }
        for phase in [Phase::Trust, Phase::Reissue] {
            let start = Step::Start(Trigger::Expiring);
            assert_eq!(advance(&rotating(phase), &start, never), Ok(None));
        }
    }

    #[test]
    fn each_step_has_its_own_event_action() {
        // kube-rs folds Events of one (reason, action) into one series.
        let steps = [Step::Start(Trigger::Expiring), Step::Reissue, Step::Finish];
        let actions: std::collections::BTreeSet<_> = steps.iter().map(Step::action).collect();
        assert_eq!(actions.len(), steps.len());
    }

    #[test]
    fn phases_round_trip_through_their_annotation_values() {
        for p in [Phase::Steady, Phase::Trust, Phase::Reissue] {
            assert_eq!(Phase::parse(p.as_str()), Some(p));
        }
        assert_eq!(Phase::parse("finish"), None);
    }
}
