// Package workspace is tfccm's Terraform engine: the only place in tfccm
// that changes infrastructure with tofu/terraform (init, plan, apply,
// destroy, state push, force-unlock). tofu is also run read-only
// elsewhere: package state reads state with `tofu show -json`, and
// package templates runs `tofu version` to check a template set's needs.
//
// A workspace is a directory under the engine's work dir holding a rendered
// root module (template files, generated inputs, generated backend block).
// The engine writes it, runs init (only when template or backend files
// changed), plans to a saved plan file and applies exactly that plan, or
// destroys it, through terraform-exec with an explicit environment.
//
// Callers never wait on tofu: Apply and Destroy record the desired state in
// the workspace's entry and add its name to a client-go rate-limited
// workqueue (queue.go). Options.Parallelism workers take names from it; the
// workqueue hands a name to one worker at a time and queues a name added
// while it is processed again afterwards, so each workspace runs one
// operation at a time, and the worker applies the entry's newest desired
// spec (coalescing). A content hash recorded in the workspace directory
// (paths.go names every file the engine keeps there) makes an unchanged
// request a no-op that starts no process, across restarts too. The phases
// of a workspace and every transition between them are in lifecycle.go.
//
// Failures are retried with jittered exponential backoff (the queue's rate
// limiter, one backoff per workspace; the name is added again after the
// delay that Status.NextRetry reports) and reported with tofu's diagnostic
// summary, scrubbed of every credential and sensitive output value. With a
// drift interval, a loop (wait.JitterUntil) re-plans every applied
// workspace once per interval, the workspaces' checks spread over the
// interval rather than all at once. A state lock left by an earlier
// incarnation of this controller (recognised from the claim file written
// before every run) is released with force-unlock; a lock held by anyone
// else is reported and never stolen. Every tofu process, and whatever it
// starts, ends with its command, with the engine's process, or at the
// next incarnation's start (procs.go).
//
// With Options.Exec (terraform { runner = "job" }) the process each
// command starts is the stand-in of package workspace/jobrunner, which
// runs the command in a Kubernetes Job and answers as tofu would; the
// engine's passes are the same.
// A new workspace's init starts from the pinned dependency lock file
// (Options.ProviderLockFile) or the one an earlier init of the same
// template wrote (initcache.go); a provider that does not match it is
// refused, never re-trusted (integrity.go); a workspace's tofu gets only
// the credentials its template declares (credentials_decl.go); the Event that says an
// apply starts takes its counts from the plan's own output (plancounts.go).
//
// Files: engine.go (Engine, its API), lifecycle.go (phases and
// transitions), run.go (one pass: apply, destroy, approved plan),
// tofu.go (tofu commands), initcache.go (what inits share),
// plancounts.go (a plan's counts), backend.go (state and backend settings),
// publish.go and review.go (review mode), planstore.go (pending plans kept
// outside the work dir, across restarts; the state check of approved
// plans), credentials.go (credentials as an ephemeral variable),
// credentials_decl.go (which credentials a workspace gets), integrity.go
// (provider checksums), procs.go
// (processes), paths.go (the files under .tfccm), queue.go, lock.go,
// record.go, applied.go, tombstone.go.
package workspace
