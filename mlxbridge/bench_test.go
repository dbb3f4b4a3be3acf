package mlxbridge

import "testing"

// BenchmarkDecodeTiny times one decode step on a tiny model: mostly the
// bridge's own cost per step (about 20 MLX calls per layer through purego
// and the dispatcher), since the model's arithmetic is negligible.
func BenchmarkDecodeTiny(b *testing.B) {
	f := load(b, "tiny-mlx-q4", Options{})
	vocab := f.m.Config.VocabSize
	c := f.cache(b)
	logits := make([]float32, vocab)
	if err := f.b.Forward(c, f.g.Prompt.IDs, logits); err != nil {
		b.Fatal(err)
	}
	n := c.Len()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c.Len() == c.Window() {
			c.Truncate(n)
		}
		if err := f.b.Forward(c, []int32{1}, logits); err != nil {
			b.Fatal(err)
		}
	}
}
