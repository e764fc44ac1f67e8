// Package transport owns how lbhost reaches a load-balancer host: the
// netns transport runs commands inside a network namespace of the local
// machine (the local cloud), the ssh transport runs them on a remote host
// over SSH with a verified host key. Commands are always argv vectors; no
// value is ever spliced into a shell command line.
package transport
