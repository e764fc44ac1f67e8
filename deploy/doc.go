// Package deploy holds tfccm's deployment manifests (deploy/base: a
// kustomize base with the ServiceAccount, RBAC and a leader-elected
// Deployment) and the test that they decode and grant what the CCM needs.
package deploy
