// Package announce puts a node-mode VIP on a Linux interface and tells the
// network: the address as a /32 or /128 (netlink), a gratuitous ARP
// (IPv4) or unsolicited neighbor advertisement (IPv6) so neighbours update
// their caches at once, and the address taken off again. It keeps a record
// of the addresses it added (Record, a file on the node's /run) so an
// agent restarted after its VIP objects were deleted still removes them.
// It never runs a command: everything is netlink and packet sockets.
package announce
