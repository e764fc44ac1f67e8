// Package deploy owns tfccm's deployment manifests: the kustomize base
// (deploy/base: the ServiceAccount, RBAC and a leader-elected Deployment)
// and the Helm chart (deploy/helm/tfccm). It decodes them strictly and
// renders the chart with helm: for its tests (what they grant and run),
// for the test harness that installs them and for the release.
package deploy
