package chat

import (
	"strings"
	"testing"
)

// BenchmarkRenderLongChat renders a 200-message conversation with the
// Llama 3.2 template, as each reply of a long chat does (the render's
// budget checks included).
func BenchmarkRenderLongChat(b *testing.B) {
	tpl := llamaTemplates(b)["meta_llama3_2"]
	msgs := []Message{{Role: "system", Content: "You are brief."}}
	for i := range 100 {
		msgs = append(msgs, Message{Role: "user", Content: strings.Repeat("question ", 20+i%7)},
			Message{Role: "assistant", Content: strings.Repeat("answer ", 60+i%11)})
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := tpl.Render(msgs, Options{AddGenerationPrompt: true}); err != nil {
			b.Fatal(err)
		}
	}
}
