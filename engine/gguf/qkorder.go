package gguf

// PermutedRow is the row of a llama file's query or key projection that
// holds row s in Hugging Face's order: llama.cpp's converter puts row
// j·headDim/2+i of each head at 2i+j, for RoPE on adjacent pairs rather
// than on the two halves of a head (bench/ggufgen's srcRow).
func PermutedRow(s, headDim int) int {
	half := headDim / 2
	h, k := s/headDim, s%headDim
	return h*headDim + 2*(k%half) + k/half
}
