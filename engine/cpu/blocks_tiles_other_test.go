//go:build !amd64

package cpu

// tilePanelSets: only amd64 has the amx set.
func tilePanelSets() []kernelSet { return nil }
