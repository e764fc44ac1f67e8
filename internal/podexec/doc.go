// Package podexec runs a command in a container of a pod through the
// pods/exec subresource (WebSocket, SPDY where the apiserver has no
// WebSocket exec), as an argument vector, never through a shell. The
// `tfccm` commands that run in the leader (cmd/tfccm/remote.go) and the
// runner pool (workspace/jobrunner) share it.
package podexec
