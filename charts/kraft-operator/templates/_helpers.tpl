{{/*
Chart name, truncated to 63 characters (the DNS label limit of names).
*/}}
{{- define "kraft-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: <release>-<chart> unless the release name already contains the
chart name; fullnameOverride wins. 63 characters at most.
*/}}
{{- define "kraft-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
helm.sh/chart label value.
*/}}
{{- define "kraft-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every resource of the chart.
*/}}
{{- define "kraft-operator.labels" -}}
helm.sh/chart: {{ include "kraft-operator.chart" . }}
{{ include "kraft-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kraftwerk
{{- end }}

{{/*
Selector labels of the operator pods (immutable in the Deployment: never add
to them).
*/}}
{{- define "kraft-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kraft-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/*
Name of the ServiceAccount the operator runs as.
*/}}
{{- define "kraft-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kraft-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The operator image: repository@digest when a digest is set, else
repository:tag (the chart's appVersion when the tag is empty).
*/}}
{{- define "kraft-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Namespace and name of the leader-election Lease.
*/}}
{{- define "kraft-operator.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace }}
{{- end }}
{{- define "kraft-operator.leaseName" -}}
{{- default (include "kraft-operator.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{/*
Fails rendering on value combinations that cannot work.
*/}}
{{- define "kraft-operator.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled: two operator pods without a Lease would both change the same quorums" }}
{{- end }}
{{- end }}
