// Package tofu owns what running one tofu command in one workspace
// directory needs below the engine: the command itself (its explicit
// environment, the credentials a template declares, its locked thread),
// the marks on every process a command starts and the ending of what a failed command or an earlier
// incarnation left running, the providers' per-command socket
// directories, the error a failed command becomes (with the diagnostics
// read from its output: the summary users see, whether init must run
// again, whether the inputs were rejected, which provider a checksum
// refused) and the plan counts read from a plan's summary line.
//
// It never imports package workspace: the engine runs its commands
// through these types.
package tofu
