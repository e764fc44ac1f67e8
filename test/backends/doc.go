// Package backends starts real servers for the state backends tfccm's
// tests use besides kubernetes. They are Debian's PostgreSQL for the pg backend
// (Postgres) and SeaweedFS's S3 gateway for the s3 backend (S3), each as
// an unprivileged process listening on loopback with its data in a
// temporary directory, stopped when the test ends. They are servers a
// user would run, not fakes: locking, conditional writes and the stored
// bytes are theirs. Both skip with -short.
package backends
