package workspace

import "github.com/tfccm/tfccm/workspace/locks"

// The owner of this process's state locks (package backends holds locks
// and claims).

// LockOwner is the "user@host" tofu records as the holder of the locks
// this process takes.
var LockOwner = locks.LockOwner
