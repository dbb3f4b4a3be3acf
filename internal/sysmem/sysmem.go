// Package sysmem reports how much physical memory the machine has, for
// refusing allocations that could never fit (a context window whose KV
// cache is larger than the machine).
package sysmem

// Total is the machine's physical memory in bytes, or 0 when it cannot be
// found out (then callers skip their check).
func Total() uint64 { return total() }
