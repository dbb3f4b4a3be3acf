package cpu

// tilePanelSets is the amx set, whose panel kernels lay out GGUF blocks
// in tile order with AVX2 alone: TestBlockPanels checks them on any x86
// int8 CPU, not only on one with AMX.
func tilePanelSets() []kernelSet { return []kernelSet{amxKernels} }
