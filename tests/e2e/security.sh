# The security cluster tests of issue 20 (sourced by run.sh): TLS by default,
# certificate renewal without restarts, the pause annotation, identity that
# survives a wiped status, the NetworkPolicy's content, and the restricted
# Pod Security Standard on every test namespace (apply_quorum enforces it).
# Each test's first lines name its namespace (run.sh's namespace_of).

# openssl_to NS POD [openssl args...]: the TLS handshake with POD's listener
# (its IP, SNI its DNS name), the quorum's CA as trust; prints openssl's output.
openssl_to() {
  local ns="$1" pod="$2" dir
  shift 2
  dir="$(dirname "$(client_config "$ns" q)")"
  timeout 10 openssl s_client -connect "$(pod_ip "$ns" "$pod"):$controller_port" \
    -servername "$pod.q.$ns.svc.cluster.local" -CAfile "$dir/ca.crt" "$@" </dev/null 2>&1 || true
}

# served_serial NS POD: the serial of the certificate POD serves.
served_serial() { openssl_to "$1" "$2" | openssl x509 -noout -serial 2>/dev/null; }

# in_cluster_describe NS POD-NAME: a pod that mounts the client Secret at
# /etc/kraft-client (restricted-compliant) and runs `kraft-controller quorum
# describe` with its client.properties against q-0's DNS name; succeeds when
# the pod does and its output names the leader.
in_cluster_describe() {
  local ns="$1" name="$2"
  kubectl -n "$ns" apply -f - >/dev/null <<POD
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: describe
    image: $image
    command: [kraft-controller]
    args: [quorum, --bootstrap-controller, "q-0.q.$ns.svc.cluster.local:$controller_port",
           --command-config, /etc/kraft-client/client.properties, describe, --status]
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
    resources: {requests: {cpu: 10m, memory: 32Mi}}
    volumeMounts:
    - {name: client-tls, mountPath: /etc/kraft-client, readOnly: true}
  volumes:
  - name: client-tls
    secret: {secretName: q-client-tls}
POD
  poll "pod $name finished" 60 bash -c \
    "[[ \$(kubectl -n $ns get pod $name -o jsonpath='{.status.phase}') =~ Succeeded|Failed ]]"
  [[ "$(kubectl -n "$ns" get pod "$name" -o jsonpath='{.status.phase}')" == Succeeded ]] || {
    echo "pod $name failed:" >&2
    cat "$cache/cluster/logs/$ns/$name/"*.log >&2 || true
    return 1
  }
  grep -q '^LeaderId:' "$cache/cluster/logs/$ns/$name/"*.log
}

# pod_uids NS: "name=uid" of every pod of q, sorted.
pod_uids() {
  kubectl -n "$1" get pods -l app.kubernetes.io/instance=q \
    -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort
}

# restarts NS: the controller containers' restart counts.
restarts() {
  kubectl -n "$1" get pods -l app.kubernetes.io/instance=q \
    -o jsonpath='{.items[*].status.containerStatuses[0].restartCount}'
}

# (20a) a default KraftQuorum is mTLS: our certificate with the pod's DNS name,
# a plaintext client gets no answer, a client without a certificate is
# refused, a pod with the client Secret describes the quorum, 3→5→3 works
# (the operator's admin client is mTLS too), the pods are restricted-compliant.
t_a_default_quorum_speaks_mtls() {
  local ns=e2e-tls out ca
  ready_three "$ns"
  out="$(openssl_to "$ns" q-1 -verify_hostname "q-1.q.$ns.svc.cluster.local")"
  grep -q 'Verify return code: 0 (ok)' <<<"$out" || {
    echo "q-1's certificate does not verify for its DNS name: $out" >&2
    return 1
  }
  openssl_to "$ns" q-1 | openssl x509 -noout -ext subjectAltName | grep -q "DNS:q-1.q.$ns.svc.cluster.local" || {
    echo "q-1's certificate lacks its DNS name" >&2
    return 1
  }
  if "$kraft_controller" quorum --bootstrap-controller "$(pod_ip "$ns" q-0):$controller_port" describe --status >/dev/null 2>&1; then
    echo "a plaintext DescribeQuorum was answered" >&2
    return 1
  fi
  ca="$(dirname "$(client_config "$ns" q)")/ca.crt"
  printf 'security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\nssl.endpoint.identification.algorithm=\n' \
    "$ca" >"$cache/e2e-tls/no-cert.properties"
  if "$kraft_controller" quorum --bootstrap-controller "$(pod_ip "$ns" q-0):$controller_port" \
    --command-config "$cache/e2e-tls/no-cert.properties" describe --status >/dev/null 2>&1; then
    echo "a client without a certificate was answered (ssl.client.auth=required)" >&2
    return 1
  fi
  in_cluster_describe "$ns" describe
  kubectl -n "$ns" scale kq/q --replicas=5 >/dev/null
  poll "5 voters Ready over mTLS" 300 is_ready "$ns" q 5
  poll "DescribeQuorum shows 5 voters" 60 voters_match "$ns" q 5
  kubectl -n "$ns" scale kq/q --replicas=3 >/dev/null
  poll "3 voters Ready over mTLS" 300 is_ready "$ns" q 3
  # Enforcement is on: a privileged pod is refused in the namespace.
  if kubectl -n "$ns" run bad --image="$image" --restart=Never \
    --overrides='{"spec":{"containers":[{"name":"bad","image":"'"$image"'","securityContext":{"privileged":true}}]}}' >/dev/null 2>&1; then
    echo "a privileged pod was admitted: the restricted standard is not enforced" >&2
    return 1
  fi
}

# (20b) a certificate renewed (leaf lifetime forced to 120 s, so renewed 80 s
# after issue): the controllers serve the new one, no pod restarts, Ready.
t_a_renewed_certificate_is_served_without_restarts() {
  local ns=e2e-renew before first
  restricted_namespace "$ns"
  kubectl -n "$ns" apply -f - >/dev/null <<KQ
apiVersion: kraft.krabka.io/v1alpha1
kind: KraftQuorum
metadata:
  name: q
  annotations: {kraft.krabka.io/test-leaf-lifetime-seconds: "120"}
spec: {replicas: 3, image: $image, storage: {size: 1Gi}}
KQ
  poll "3 voters Ready" 240 is_ready "$ns" q 3
  before="$(pod_uids "$ns")"
  first="$(served_serial "$ns" q-0)"
  [[ -n "$first" ]] || {
    echo "no certificate served" >&2
    return 1
  }
  poll "q-0 serves a renewed certificate" 240 bash -c \
    "source '$e2e_lib_dir/lib.sh'; source '$e2e_lib_dir/security.sh'; s=\$(served_serial $ns q-0); [[ -n \"\$s\" && \"\$s\" != '$first' ]]"
  poll "still Ready" 60 is_ready "$ns" q 3
  [[ "$(pod_uids "$ns")" == "$before" ]] || {
    printf 'pods were replaced:\nbefore %s\nafter %s\n' "$before" "$(pod_uids "$ns")" >&2
    return 1
  }
  [[ "$(restarts "$ns")" == "0 0 0" ]]
}

# (20c) pause: with the annotation, a scale to 5 changes nothing for a minute
# (watched: the StatefulSet's replicas and the pods), Paused=True; removing
# it resumes the scale.
t_pause_freezes_the_quorum_until_the_annotation_goes() {
  local ns=e2e-pause seen
  ready_three "$ns"
  kubectl -n "$ns" annotate kq q kraft.krabka.io/pause-reconciliation=true >/dev/null
  poll "Paused=True" 60 bash -c \
    "[[ \$(kubectl -n $ns get kq q -o jsonpath='{.status.conditions[?(@.type==\"Paused\")].status}') == True ]]"
  kubectl -n "$ns" scale kq/q --replicas=5 >/dev/null
  # Watch for 60 s: every StatefulSet replicas value and every pod name seen.
  seen="$(
    timeout 60 kubectl -n "$ns" get statefulset q --watch -o jsonpath='{.spec.replicas}{"\n"}' 2>/dev/null &
    timeout 60 kubectl -n "$ns" get pods --watch -o name 2>/dev/null &
    wait
  )"
  [[ -n "$seen" ]] || {
    echo "the watches saw nothing" >&2
    return 1
  }
  if grep -qvE '^(3|pod/q-[012])$' <<<"$seen"; then
    echo "something changed while paused: $(sort -u <<<"$seen" | tr '\n' ' ')" >&2
    return 1
  fi
  [[ "$(kq "$ns" q '{.status.voters[*].nodeId}' | wc -w)" == 3 ]]
  kubectl -n "$ns" annotate kq q kraft.krabka.io/pause-reconciliation- >/dev/null
  poll "5 voters Ready after resuming" 300 is_ready "$ns" q 5
  [[ -z "$(kq "$ns" q '{.status.conditions[?(@.type=="Paused")].status}')" ]]
}

# (20d) status wiped (`kubectl replace --subresource=status` with an empty
# status): the same cluster id and directory ids come back, no pod restarts,
# no ClusterIdMismatch.
t_a_wiped_status_gets_the_same_identity_back() {
  local ns=e2e-wiped id voters before
  ready_three "$ns"
  id="$(kq "$ns" q '{.status.clusterId}')"
  voters="$(kq "$ns" q '{.status.initialVoters}')"
  before="$(pod_uids "$ns")"
  kubectl -n "$ns" get kq q -o json | python3 -c '
import json, sys
o = json.load(sys.stdin); o["status"] = {}; print(json.dumps(o))' |
    kubectl replace --subresource=status -f - >/dev/null
  poll "status has its identity back and is Ready" 120 bash -c \
    "source '$e2e_lib_dir/lib.sh'; [[ \$(kq $ns q '{.status.clusterId}') == '$id' ]] && is_ready $ns q 3"
  [[ "$(kq "$ns" q '{.status.initialVoters}')" == "$voters" ]] || {
    echo "initial voters changed: $voters -> $(kq "$ns" q '{.status.initialVoters}')" >&2
    return 1
  }
  poll "DescribeQuorum agrees with the status" 60 voters_match "$ns" q 3
  [[ "$(pod_uids "$ns")" == "$before" ]] || {
    echo "pods were replaced" >&2
    return 1
  }
  [[ "$(restarts "$ns")" == "0 0 0" ]]
  if kq "$ns" q '{.status.conditions}' | grep -q ClusterIdMismatch; then
    echo "ClusterIdMismatch reported" >&2
    return 1
  fi
}

# (20e) the NetworkPolicy: 9093 from the quorum's pods, the operator and the
# broker label; 9100 from the monitoring selector (content only: the local
# cluster does not enforce NetworkPolicies).
t_the_network_policy_has_the_rules_asked_for() {
  local ns=e2e-netpol
  restricted_namespace "$ns"
  kubectl -n "$ns" apply -f - >/dev/null <<KQ
apiVersion: kraft.krabka.io/v1alpha1
kind: KraftQuorum
metadata: {name: q}
spec:
  replicas: 1
  image: $image
  storage: {size: 1Gi}
  networkPolicy:
    brokerPodLabels: {app: kafka-broker}
    monitoringNamespaceLabels: {kubernetes.io/metadata.name: monitoring}
KQ
  poll "NetworkPolicy q exists" 60 kubectl -n "$ns" get networkpolicy q
  kubectl -n "$ns" get networkpolicy q -o json | python3 -c '
import json, sys
spec = json.load(sys.stdin)["spec"]
own = {"app.kubernetes.io/instance": "q", "app.kubernetes.io/name": "kraft-controller"}
assert spec["podSelector"]["matchLabels"] == own, spec
assert spec["policyTypes"] == ["Ingress"], spec
listener, metrics = spec["ingress"]
assert listener["ports"] == [{"port": 9093, "protocol": "TCP"}], listener
peers = listener["from"]
assert peers[0] == {"podSelector": {"matchLabels": own}}, peers
assert peers[1]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "kraft-system"}, peers
assert peers[1]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "kraft-operator", peers
assert peers[2] == {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "kafka-broker"}}}, peers
assert metrics["ports"] == [{"port": 9100, "protocol": "TCP"}], metrics
assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}], metrics
'
}
