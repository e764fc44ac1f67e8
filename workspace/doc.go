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
//   - each pass's runner in a workspace directory (package
//     workspace/tofu's Runner, built from the engine's options and the
//     spec, with what the passes judge) and the engine's metrics it
//     records into (running tofu in one directory — commands, what inits
//     share, prepared .terraform directories, credentials — is package
//     workspace/tofu's);
//   - a workspace's state: reading it, its outputs, errored.tfstate,
//     removing what a destroy leaves, tombstones of destroyed workspaces,
//     and what a catalog entry says (the backend's settings, tofu's
//     backend record, the kubernetes backend's objects and the catalog
//     store are package workspace/backends's, the locks and claims
//     package workspace/locks's);
//   - plans in the engine: review mode's pending plans and approvals, their
//     publication into the workspace, keeping them in the plan store, and
//     the gate's judgement of each plan
//     (what a plan is, its redacted form, the gate's types and the store's
//     contract are package workspace/plans's);
//   - previews for `tfccm plan`: a read-only plan of a workspace (its
//     apply, or its destroy) against its real state, and a read of one
//     entry of the state backend's catalog, each in a scratch directory
//     the caller owns, taking no lock (PreviewPlan, PreviewCatalogEntry).
//
// With Options.Exec (terraform { runner = "job" }) each command runs the
// stand-in of package workspace/jobrunner, which runs it in a Kubernetes
// Job and answers as tofu would; the engine's passes are the same.
package workspace
