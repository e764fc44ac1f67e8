// Package podexec runs a command in a container of a pod through the
// pods/exec subresource (WebSocket, SPDY where the apiserver has no
// WebSocket exec), as an argument vector, never through a shell: one exec
// client for the `tfccm` commands that run in the leader and for the job
// runner's pool.
package podexec
