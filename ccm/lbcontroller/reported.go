// reported: the value last reported for each key (a Service's UID), so
// that a Warning is recorded once per value, not on every sync.

package lbcontroller

import "sync"

// reported remembers the value last reported for each key. The zero value
// is ready; it is safe for concurrent use.
type reported[K comparable] struct {
	mu   sync.Mutex
	last map[K]string
}

// isNew records v as k's value and reports whether it is new: not the
// value last recorded for k (a report is due).
func (r *reported[K]) isNew(k K, v string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.last[k]; ok && last == v {
		return false
	}
	if r.last == nil {
		r.last = map[K]string{}
	}
	r.last[k] = v
	return true
}

// forget drops what was recorded for k: its next value is new.
func (r *reported[K]) forget(k K) {
	r.mu.Lock()
	delete(r.last, k)
	r.mu.Unlock()
}
