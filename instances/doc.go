// Package instances owns the instances index: it answers the CCM's
// instance lookups (by providerID and node name) from Terraform state.
//
// A Store reads one or more state sources (a Terraform working directory,
// read through the backend block it declares with `tofu state pull` from a
// scratch directory, or a state file, read directly) as raw state, without
// any provider plugin or schema (turned into show -json's shape here),
// maps their resources to instances with an instances.hcl mapping (package
// instances/mapping) and serves lookups by providerID and node name from an
// in-memory index. With the cloud config's encryption, tofu decrypts.
//
// Refreshes are cached for a TTL, coalesced with singleflight, rate limited
// with a token bucket per source and backed off exponentially (with jitter)
// after failures. Store.Start keeps each source fresh in the background
// (wait.BackoffUntil, reading at 90% of the TTL or when the backoff
// allows); WatchMapping re-reads an instances.hcl file on an interval
// (wait.Until). Stale state is served up to a maximum staleness; beyond
// that, lookups fail. A lookup miss forces at most one rate-limited refresh.
// ErrNotFound is returned only when every source was read successfully
// within the TTL and none of them holds the instance: a read failure, stale
// state or a mapping error is always an error, never "gone". A read that
// maps no instance where the source's last good read mapped some (an
// emptied or missing remote state: `tofu state pull` prints nothing) is a
// failed read too, ErrEmptied: the last good state keeps serving, unless
// the source sets allow_empty.
package instances
