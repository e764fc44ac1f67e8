// Package keyserver derives OpenTofu state and plan encryption keys once
// per passphrase, salt and process, and hands them to tofu through
// OpenTofu's external key provider protocol.
//
// The cloud config's key_provider "tfccm_pbkdf2" (the admin's side of the
// trust boundary: the admin owns the cloud config and the passphrase's
// Secret) is given to tofu as key_provider "external", whose command is the
// running binary itself with Marker as its first argument, the server's
// socket and an opaque key id. That helper reads tofu's metadata from
// stdin, asks the server over a unix socket (in a 0700 directory, callers
// of another uid refused) and prints the keys. The passphrase stays in the
// controller's memory: it is in no process's arguments, no environment of
// tofu or its providers, and no file.
//
// PBKDF2 (SHA-512, 600,000 iterations, 32-byte keys and salts: OpenTofu's
// pbkdf2 defaults) is run once for the process's own salt, which encrypts
// every state and plan it writes, and once for each other salt found in
// the metadata of a state it reads (a state written by an earlier
// process), instead of twice per tofu command as OpenTofu's pbkdf2 does.
package keyserver
