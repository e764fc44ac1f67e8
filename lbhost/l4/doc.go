// Package l4 owns the layer-4 load balancer of an lbhost host: for every
// load balancer (a JSON file per load balancer in a directory, written by
// the provider's lbhost_l4_frontend resource) it health-checks the
// backends and keeps one nftables table (NftTable, family ip) that
// destination-NATs each VIP:port (TCP, UDP or SCTP) to the healthy
// backends' node port, spread per connection with numgen (or by client
// address with jhash for ClientIP affinity), as kube-proxy's nftables mode
// does; conntrack keeps each connection on its backend and reverses the
// NAT on replies. Packets are forwarded, not proxied: the backends see the
// client's own address unless the load balancer rewrites the source (SNAT,
// to the VIP), and UDP passes like TCP.
//
// The table is built as nft's JSON (never a script with values spliced in)
// and replaced atomically, so established connections (their conntrack
// entries) outlive every reload.
package l4
