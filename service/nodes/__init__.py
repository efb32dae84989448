"""Nodes: the hosts that run sandboxes, and the leases by which each holds its place."""
