// Package workspace is tfccm's Terraform engine: the only place in tfccm
// that changes infrastructure with tofu/terraform (init, plan, apply,
// destroy, state push, force-unlock). tofu is also run read-only
// elsewhere: package instances reads state with `tofu show -json`, and
// package templates runs `tofu version` to check a template set's needs.
//
// It owns:
//   - the workspace: a directory under the engine's work dir holding a
//     rendered root module (Spec: template files, generated inputs,
//     generated backend block), one content hash that makes an unchanged
//     request a no-op across restarts, and the files the engine keeps
//     beside it (its record, claim, plans);
//   - the engine's API (Engine: Apply, Destroy, Status, Wait, Approve,
//     Reconcile, Probe, the catalog's reads) and the one conversion of the
//     cloud config into its Options (OptionsFor);
//   - the lifecycle: a workspace's phases and every transition between
//     them, in one table tested row by row; callers never wait on tofu:
//     Apply and Destroy record the desired state, and workers of a client-go
//     rate-limited workqueue bring each workspace to its newest desired
//     spec, one operation per workspace at a time, retrying failures with
//     jittered exponential backoff and, with a drift interval, re-planning
//     applied workspaces spread over the interval;
//   - one pass over a workspace (passes): init when template or backend
//     files changed, plan to a saved plan file, the gate's judgement, and
//     apply of exactly that plan (or destroy), or publication for review;
//   - running tofu in one directory (runner, over terraform-exec with an
//     explicit environment): what inits share (lock files per provider set,
//     the pinned lock file whose checksums refuse a provider that does not
//     match, prepared .terraform directories), the timeout, metrics and
//     stale-lock release around each command, and each command's
//     credentials (those its template declares, and only those), scrubbed
//     of every credential and sensitive output (what a command's processes,
//     sockets, error, diagnostics and plan counts are is package
//     workspace/tofu's);
//   - backends: backend settings (secret ones never written to the
//     directory), the release of its own stale state locks by a new
//     incarnation, tombstones of destroyed workspaces, and the catalog of
//     workspaces in the state backend (tofu's backend record is package
//     workspace/backends's, the locks and claims package
//     workspace/locks's);
//   - plans in the engine: review mode's pending plans and approvals, their
//     publication into the workspace, keeping them in the plan store, and
//     the gate's judgement of each plan
//     (what a plan is, its redacted form, the gate's types and the store's
//     contract are package workspace/plans's).
//
// With Options.Exec (terraform { runner = "job" }) each command runs the
// stand-in of package workspace/jobrunner, which runs it in a Kubernetes
// Job and answers as tofu would; the engine's passes are the same.
package workspace
