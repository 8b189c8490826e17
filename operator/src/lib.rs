//! `kraft-operator`: a Kubernetes operator for KRaft controller quorums.
