// Package seal encrypts small blobs that tfccm keeps in the cluster (review
// mode's pending plans) with AES-256-GCM: a random nonce per blob, and
// associated data that binds a blob to where it is kept, so that a blob
// copied elsewhere does not open.
package seal
