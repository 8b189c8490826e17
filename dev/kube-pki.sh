# shellcheck shell=bash disable=SC2154  # pki, HOST_IP, API_PORT: set by the sourcing script
# Sourced, not run: the local cluster's client certificates, kubeconfigs and
# the version stamp of Kubernetes commands built from Go modules, shared by
# dev/cluster.sh, dev/install-tools.sh and dev/real-node/*.sh.
#
# Needs from the script that sources it: `pki` (the cluster CA's directory,
# ca.crt and ca.key in it) for `cert`; HOST_IP and API_PORT (the API server)
# for `write_kubeconfig`; KUBERNETES_VERSION (dev/versions.sh) for
# `kube_ldflags`.

# cert NAME CN ORG [SAN]: $pki/NAME.{key,crt}, a client certificate signed by
# the cluster CA (a server one too when SAN is given); kept if it exists.
cert() {
  local name="$1" cn="$2" org="$3" san="${4:-}"
  [[ -f "$pki/$name.crt" ]] && return 0
  local subj="/CN=$cn"
  [[ -n "$org" ]] && subj="/O=$org$subj"
  openssl genrsa -out "$pki/$name.key" 2048 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n "$san" ]]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 365 -sha256 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}

# write_kubeconfig FILE USER CERT: a kubeconfig for the API server at
# HOST_IP:API_PORT, as USER with the certificate $pki/CERT.{crt,key}.
write_kubeconfig() {
  local file="$1" user="$2" name="$3"
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kraftwerk
  cluster:
    server: https://$HOST_IP:$API_PORT
    certificate-authority: $pki/ca.crt
users:
- name: $user
  user:
    client-certificate: $pki/$name.crt
    client-key: $pki/$name.key
contexts:
- name: kraftwerk
  context: {cluster: kraftwerk, user: $user}
current-context: kraftwerk
EOF
}

# kube_ldflags: the -ldflags that stamp KUBERNETES_VERSION into a Kubernetes
# command built from Go modules (what `kubectl version` and /version report).
kube_ldflags() {
  local minor="${KUBERNETES_VERSION#v1.}" ld="-s -w" pkg
  minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  echo "$ld"
}
