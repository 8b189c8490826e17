//go:build tools

// Package tools pins the Kubernetes commands this module builds (kubelet,
// kube-scheduler and kube-proxy for the real node, dev/real-node), so that
// `go mod tidy` keeps their dependencies in go.sum. Never compiled.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
