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

# in_cluster_describe NS POD-NAME: a pod that mounts the brokers' client Secret at
# /etc/kraft-client (restricted-compliant) and runs `kraft-controller quorum
# describe` with its client.properties against q-0's DNS name; succeeds when
# the TLS session is accepted and the request refused CLUSTER_AUTHORIZATION_FAILED
# (the brokers are no super user; the ACL the operator gives them is
# CLUSTER_ACTION, which implies neither DESCRIBE nor ALTER).
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
  # The brokers' identity is no super user (review O1): its TLS session is
  # accepted (certificate of the quorum's CA) and DescribeQuorum (DESCRIBE) is
  # refused CLUSTER_AUTHORIZATION_FAILED: the operator's ACL grants it
  # CLUSTER_ACTION only (docs/operations.md).
  [[ "$(kubectl -n "$ns" get pod "$name" -o jsonpath='{.status.phase}')" == Failed ]] &&
    grep -q 'CLUSTER_AUTHORIZATION_FAILED' "$cache/cluster/logs/$ns/$name/"*.log || {
    echo "pod $name with the brokers' client Secret was not refused CLUSTER_AUTHORIZATION_FAILED:" >&2
    cat "$cache/cluster/logs/$ns/$name/"*.log >&2 || true
    return 1
  }
}

# broker_acl_created NS: the operator's log says it created the brokers'
# CLUSTER_ACTION ACL for NS/q (controller/src/acl; the controller side is
# tested by process_envelope and interop_kafka_acls).
broker_acl_created() {
  cat "$cache/cluster/logs/$operator_ns"/*/*.log 2>/dev/null |
    grep "created the brokers' ACL" | grep -q "$1/q"
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
# refused, a pod with the brokers' client Secret is authenticated but may not
# describe (no super user), the operator's identity describes it, 3→5→3 works
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
  poll "the operator created the brokers' CLUSTER_ACTION ACL" 120 broker_acl_created "$ns"
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
assert peers[2] == {"podSelector": {"matchLabels": {"app": "kafka-broker"}}}, peers
assert metrics["ports"] == [{"port": 9100, "protocol": "TCP"}], metrics
assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}], metrics
'
}

# standin_cert_manager_crds apply|delete: minimal CRDs for cert-manager's
# Certificate and Issuer (cert-manager itself cannot be installed from this
# machine's registries: it is published as container images and a chart
# pointing at them, and the local cluster runs no containers).
standin_cert_manager_crds() {
  local verb="$1" kind plural
  for kind in Certificate Issuer; do
    plural="$(tr '[:upper:]' '[:lower:]' <<<"$kind")s"
    kubectl "$verb" -f - >/dev/null 2>&1 <<CRD || [[ "$verb" == delete ]]
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $plural.cert-manager.io}
spec:
  group: cert-manager.io
  scope: Namespaced
  names: {kind: $kind, plural: $plural, singular: $(tr '[:upper:]' '[:lower:]' <<<"$kind")}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
CRD
  done
}

# play_cert_manager NS DIR: issue every Certificate of NS as cert-manager
# would (CA issuer): a Secret with ca.crt, tls.crt, tls.key and
# tls-combined.pem, the subject and DNS names the Certificate asks for.
play_cert_manager() {
  local ns="$1" dir="$2" name secret cn sans
  for name in $(kubectl -n "$ns" get certificates.cert-manager.io -o jsonpath='{.items[*].metadata.name}'); do
    secret="$(kubectl -n "$ns" get certificates.cert-manager.io "$name" -o jsonpath='{.spec.secretName}')"
    cn="$(kubectl -n "$ns" get certificates.cert-manager.io "$name" -o jsonpath='{.spec.commonName}')"
    sans="$(kubectl -n "$ns" get certificates.cert-manager.io "$name" -o jsonpath='{.spec.dnsNames[*]}' | sed 's/[^ ]*/DNS:&/g; s/ /,/g')"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/$name.key" 2>/dev/null
    openssl req -new -key "$dir/$name.key" -subj "/CN=$cn" -out "$dir/$name.csr" 2>/dev/null
    printf 'extendedKeyUsage=serverAuth,clientAuth\n%s' "${sans:+subjectAltName=$sans}" >"$dir/$name.ext"
    openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
      -days 90 -extfile "$dir/$name.ext" -out "$dir/$name.crt" 2>/dev/null
    cat "$dir/$name.key" "$dir/$name.crt" >"$dir/$name.combined"
    kubectl -n "$ns" create secret generic "$secret" --from-file=ca.crt="$dir/ca.crt" \
      --from-file=tls.crt="$dir/$name.crt" --from-file=tls.key="$dir/$name.key" \
      --from-file=tls-combined.pem="$dir/$name.combined" >/dev/null
  done
}

# (20f) spec.tls.issuerRef: without cert-manager the quorum says so
# (CertManagerMissing); with its API but no issuer, IssuerNotFound; with the
# issuer, the operator writes the three Certificates (content checked) and
# waits; once their Secrets are filled (this test plays cert-manager: see
# standin_cert_manager_crds) the quorum runs on those certificates.
t_an_issuer_ref_uses_cert_manager_certificates() {
  local ns=e2e-certmgr dir out
  standin_cert_manager_crds delete
  restricted_namespace "$ns"
  kubectl -n "$ns" apply -f - >/dev/null <<KQ
apiVersion: kraft.krabka.io/v1alpha1
kind: KraftQuorum
metadata: {name: q}
spec:
  replicas: 1
  image: $image
  storage: {size: 1Gi}
  tls: {issuerRef: {name: corp-ca}}
KQ
  poll "Degraded/CertManagerMissing" 60 degraded_because "$ns" q CertManagerMissing
  kq "$ns" q '{.status.conditions[?(@.type=="Degraded")].message}' | grep -q 'cert-manager is not installed'
  standin_cert_manager_crds apply
  poll "Degraded/IssuerNotFound" 60 degraded_because "$ns" q IssuerNotFound
  kubectl -n "$ns" apply -f - >/dev/null <<ISSUER
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: corp-ca}
spec: {ca: {secretName: corp-ca}}
ISSUER
  poll "three Certificates written" 60 bash -c \
    "[[ \$(kubectl -n $ns get certificates.cert-manager.io -o name | wc -l) == 3 ]]"
  kubectl -n "$ns" get certificates.cert-manager.io q-tls -o json | python3 -c '
import json, sys
spec = json.load(sys.stdin)["spec"]
assert spec["issuerRef"] == {"name": "corp-ca", "kind": "Issuer", "group": "cert-manager.io"}, spec
assert spec["secretName"] == "q-tls" and spec["commonName"] == "kraft-controller.e2e-certmgr.q", spec
assert "q-0.q.e2e-certmgr.svc.cluster.local" in spec["dnsNames"], spec
assert spec["duration"] == "2160h" and spec["renewBefore"] == "720h", spec
assert {"type": "CombinedPEM"} in spec["additionalOutputFormats"], spec'
  [[ -z "$(kubectl -n "$ns" get statefulset q -o name 2>/dev/null)" ]] || {
    echo "pods built before the certificates exist" >&2
    return 1
  }
  dir="$cache/e2e-tls/certmgr"
  rm -rf "$dir" && mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=e2e stand-in CA" -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  play_cert_manager "$ns" "$dir"
  poll "1 voter Ready on cert-manager's certificates" 240 is_ready "$ns" q 1
  out="$(openssl_to "$ns" q-0 -verify_hostname "q-0.q.$ns.svc.cluster.local")"
  grep -q 'issuer=CN *= *e2e stand-in CA' <<<"$out" && grep -q 'Verify return code: 0 (ok)' <<<"$out" || {
    echo "q-0 does not serve the issued certificate: $out" >&2
    return 1
  }
  standin_cert_manager_crds delete
}
