{{/* Names and labels shared by every template. */}}

{{- define "agentcard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agentcard.fullname" -}}
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

{{- define "agentcard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agentcard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "agentcard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "agentcard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: agentcard-operator
{{- end }}

{{- define "agentcard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "agentcard.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "agentcard.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "agentcard.sidecarImage" -}}
{{- default (include "agentcard.image" .) .Values.sidecar.image }}
{{- end }}

{{/* The webhook's Service, MutatingWebhookConfiguration and TLS Secret names. */}}
{{- define "agentcard.webhookService" -}}
{{- printf "%s-webhook" (include "agentcard.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agentcard.webhookConfig" -}}
{{- include "agentcard.fullname" . }}
{{- end }}

{{- define "agentcard.webhookSecret" -}}
{{- default (printf "%s-webhook-tls" (include "agentcard.fullname" .) | trunc 63 | trimSuffix "-") .Values.webhook.certificate.secretName }}
{{- end }}

{{- define "agentcard.certManager" -}}
{{- if and .Values.webhook.enabled (eq .Values.webhook.certificate.mode "cert-manager") }}true{{ end }}
{{- end }}

{{- define "agentcard.selfSignedWebhook" -}}
{{- if and .Values.webhook.enabled (eq .Values.webhook.certificate.mode "self-signed") }}true{{ end }}
{{- end }}

{{- define "agentcard.certificateName" -}}
{{- printf "%s-webhook" (include "agentcard.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Where the cert-manager Secret is mounted in the operator container. */}}
{{- define "agentcard.webhookCertDir" -}}
/etc/agentcard/webhook-tls
{{- end }}

{{/* The HTTPS path the operator serves the Pod admission webhook on. */}}
{{- define "agentcard.webhookPath" -}}
/mutate-pods
{{- end }}

{{/*
The namespace-selector expression of namespace-scoped mode: only the namespaces whose AgentCards
this release manages (`watchNamespaces`). Empty when every namespace is watched. Used by the Pod
webhook and the nesting policy's binding.
*/}}
{{- define "agentcard.watchedNamespacesExpression" -}}
{{- if .Values.watchNamespaces }}
- key: kubernetes.io/metadata.name
  operator: In
  values: {{ toJson .Values.watchNamespaces }}
{{- end }}
{{- end }}
