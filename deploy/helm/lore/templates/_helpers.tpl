{{- define "lore.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "lore.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "lore.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "lore.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lore.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "lore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "lore.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lore.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "lore.secretName" -}}
{{- if .Values.secrets.create -}}{{ include "lore.fullname" . }}{{- else -}}{{ required "secrets.existingSecret is required when secrets.create is false" .Values.secrets.existingSecret }}{{- end -}}
{{- end -}}

{{- define "lore.serviceUrl" -}}
{{ ternary "https" "http" .root.Values.tls.enabled }}://{{ include "lore.fullname" .root }}-{{ .name }}:{{ (index .root.Values .name).port }}
{{- end -}}

{{/* HTTPS where the component serves TLS (the services, with tls.enabled); the gateway stays HTTP. */}}
{{- define "lore.probeScheme" -}}
{{- if and .root.Values.tls.enabled (ne .name "gateway") -}}HTTPS{{- else -}}HTTP{{- end -}}
{{- end -}}

{{/* The variables each component reads besides the Secret: address, data dir, its neighbours. */}}
{{- define "lore.componentEnv" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $c := index $root.Values $name -}}
- name: LORE_CONFIG_DIR
  value: /etc/lore
- name: LORE_PORT
  value: {{ $c.port | quote }}
- name: LORE_WORKERS
  value: {{ $c.workers | quote }}
{{- if eq $name "gateway" }}
- name: LORE__GATEWAY__HOST
  value: 0.0.0.0
- name: LORE__GATEWAY__PORT
  value: {{ $c.port | quote }}
{{- range $module := list "docdb" "gen" "mem" }}
- name: LORE__GATEWAY__{{ upper $module }}_URL
  value: {{ include "lore.serviceUrl" (dict "root" $root "name" $module) | quote }}
{{- end }}
{{- else }}
- name: LORE__{{ upper $name }}__SERVER__HOST
  value: 0.0.0.0
- name: LORE__{{ upper $name }}__SERVER__PORT
  value: {{ $c.port | quote }}
- name: LORE__{{ upper $name }}__SERVER__DATA_DIR
  value: /data
{{- end }}
# The internal credential as a file, read again when the Secret changes: a rotation needs no restart.
- name: LORE__SECURITY__INTERNAL_TOKEN_FILE
  value: /etc/lore-internal/token
{{- if $root.Values.tls.enabled }}
{{- if ne $name "gateway" }}
- name: GRANIAN_SSL_CERTIFICATE
  value: /etc/lore-tls/tls.crt
- name: GRANIAN_SSL_KEYFILE
  value: /etc/lore-tls/tls.key
{{- end }}
- name: LORE__SECURITY__TLS_CA
  value: /etc/lore-tls/ca.crt
{{- end }}
{{- if eq $name "gen" }}
- name: LORE__GEN__DOCDB_URL
  value: {{ include "lore.serviceUrl" (dict "root" $root "name" "docdb") | quote }}
{{- end }}
{{- range $key, $value := $c.env }}
- name: {{ $key }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{/* Deployment, Service, PVC and HPA of one component: (dict "root" $ "name" "docdb"). */}}
{{- define "lore.component" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $c := index $root.Values $name -}}
{{- if $c.enabled }}
{{- $fullname := printf "%s-%s" (include "lore.fullname" $root) $name -}}
{{- if and $c.persistence.enabled (eq $c.persistence.accessMode "ReadWriteOnce") (or $c.autoscaling.enabled (gt (int $c.replicaCount) 1)) }}
{{- fail (printf "%s: several replicas cannot mount one ReadWriteOnce volume; set %s.persistence.enabled=false (on external stores, with stores.s3 for docdb's raw files, a pod's disk holds nothing to keep) or %s.persistence.accessMode=ReadWriteMany" $name $name $name) }}
{{- end -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "lore.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
spec:
  {{- if not $c.autoscaling.enabled }}
  replicas: {{ $c.replicaCount }}
  {{- end }}
  {{- if and $c.persistence.enabled (eq $c.persistence.accessMode "ReadWriteOnce") }}
  strategy:
    type: Recreate
  {{- end }}
  selector:
    matchLabels:
      {{- include "lore.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "lore.selectorLabels" . | nindent 8 }}
      annotations:
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
    spec:
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      containers:
        - name: {{ $name }}
          image: "{{ $root.Values.image.repository }}/lore-{{ $name }}:{{ $root.Values.image.tag | default $root.Chart.AppVersion }}"
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          ports:
            - name: http
              containerPort: {{ $c.port }}
              protocol: TCP
          env:
            {{- include "lore.componentEnv" . | nindent 12 }}
          envFrom:
            - secretRef:
                name: {{ include "lore.secretName" $root }}
          # Start-up and readiness follow /health (the stores too); liveness asks only whether the
          # process answers (/livez), so a store outage takes pods out of the Service without
          # restarting them.
          startupProbe:
            httpGet:
              path: /health
              port: http
              scheme: {{ include "lore.probeScheme" . }}
            periodSeconds: 5
            timeoutSeconds: 5
            failureThreshold: 60
          readinessProbe:
            httpGet:
              path: /health
              port: http
              scheme: {{ include "lore.probeScheme" . }}
            periodSeconds: 10
            timeoutSeconds: 5
            failureThreshold: 3
          livenessProbe:
            httpGet:
              path: /livez
              port: http
              scheme: {{ include "lore.probeScheme" . }}
            periodSeconds: 20
            timeoutSeconds: 5
            failureThreshold: 3
          resources:
            {{- toYaml $c.resources | nindent 12 }}
          volumeMounts:
            - name: config
              mountPath: /etc/lore
              readOnly: true
            - name: data
              mountPath: /data
            - name: internal-token
              mountPath: /etc/lore-internal
              readOnly: true
            {{- if $root.Values.tls.enabled }}
            - name: tls
              mountPath: /etc/lore-tls
              readOnly: true
            {{- end }}
      volumes:
        - name: config
          configMap:
            name: {{ include "lore.fullname" $root }}-config
        - name: data
          {{- if $c.persistence.enabled }}
          persistentVolumeClaim:
            claimName: {{ $fullname }}-data
          {{- else }}
          emptyDir: {}
          {{- end }}
        - name: internal-token
          secret:
            secretName: {{ include "lore.secretName" $root }}
            items:
              - key: LORE__SECURITY__INTERNAL_TOKEN
                path: token
        {{- if $root.Values.tls.enabled }}
        - name: tls
          secret:
            secretName: {{ required "tls.secretName is required when tls.enabled (a Secret with tls.crt, tls.key and ca.crt)" $root.Values.tls.secretName }}
        {{- end }}
      {{- with $c.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- if or $c.autoscaling.enabled (gt (int $c.replicaCount) 1) }}
---
# Voluntary disruptions (node drains, upgrades) keep at least one replica serving.
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "lore.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      {{- include "lore.selectorLabels" . | nindent 6 }}
{{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "lore.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
spec:
  type: ClusterIP
  selector:
    {{- include "lore.selectorLabels" . | nindent 4 }}
  ports:
    - name: http
      port: {{ $c.port }}
      targetPort: http
      protocol: TCP
{{- if $c.persistence.enabled }}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{ $fullname }}-data
  labels:
    {{- include "lore.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
spec:
  accessModes:
    - {{ $c.persistence.accessMode }}
  {{- with $c.persistence.storageClass }}
  storageClassName: {{ . }}
  {{- end }}
  resources:
    requests:
      storage: {{ $c.persistence.size }}
{{- end }}
{{- if $c.autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "lore.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $name }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $fullname }}
  minReplicas: {{ $c.autoscaling.minReplicas }}
  maxReplicas: {{ $c.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $c.autoscaling.targetCPUUtilizationPercentage }}
{{- end }}
{{- end }}
{{- end -}}
