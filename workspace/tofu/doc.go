// Package tofu owns running tofu in one workspace directory below the
// engine: the runner and the commands every directory needs, what inits
// share, and each command's environment, processes, sockets, errors and
// plan counts.
//
// The runner (Runner, over a DirSpec: the few things of a workspace it
// needs) runs one command at a time with the timeout, metrics (through
// the Metrics interface the engine implements), the release of its own
// stale state lock and the turning of failures into errors; it runs init
// and init again, force-unlock and the lock probe. What inits share
// (InitCache): lock files per provider set, the pinned lock file whose
// checksums refuse a provider that does not match, prepared .terraform
// directories. Each command (Command): its explicit environment, the
// credentials a template declares and the ephemeral credentials
// variable, its locked thread, the marks on every process it starts and
// the ending of what a failed command or an earlier incarnation left
// running, the providers' per-command socket directories. The error a
// failed command becomes, with the diagnostics read from its output (the
// summary users see, whether init must run again, whether the inputs
// were rejected, which provider a checksum refused), and the plan counts
// read from a plan's summary line.
//
// It never imports package workspace: the engine builds its runners from
// its options and specs and runs its passes through them.
package tofu
