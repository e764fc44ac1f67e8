// Package jobrunner runs tofu commands as Kubernetes Jobs (terraform {
// runner = "job" }): the workspace engine stays in the CCM, renders,
// decides, publishes and records, and every tofu command it starts runs in
// a pod from tfccm's own image on the cluster's nodes.
//
// The seam is the executable the engine runs (workspace.Options.Exec):
// with the job runner it is the CCM's own binary, which Client turns into
// a stand-in for tofu when TFCCM_JOB_RUNNER is in its environment. The
// stand-in packs the workspace directory, the command line and
// its environment into input Secrets, creates a Job whose pod
// runs `tfccm run` twice: in its init container "tofu" it unpacks
// the inputs, runs tofu and writes tofu's exit code, output and the
// workspace files it changed as an archive into the pod's work volume; in
// its container "result", the only one with a token unless the state
// backend needs one, it writes that archive into result Secrets owned by
// the Job. A runner pod is untrusted code: no link out of the workspace
// travels either way, and a namespace that refuses the pod
// fails the run at once. The stand-in then writes those
// files back into the workspace directory and
// tofu's output to its own stdout and stderr, and exits with tofu's code:
// to the engine it is tofu (its lock errors, diagnostics and plan files
// included).
//
// Nothing goes through pod logs and nothing through a ConfigMap: inputs
// and results are split over up to MaxParts Secrets of PartSize bytes
// each. Runs of one workspace never overlap: before creating
// a Job the stand-in waits for every unfinished Job of the same workspace
// and controller (one left by an earlier incarnation, adopted); a state
// lock whose holder is a finished or vanished runner pod of this
// controller is released by the engine (Locks.Gone).
package jobrunner
