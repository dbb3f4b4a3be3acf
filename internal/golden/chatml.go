package golden

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ChatML token ids in ChatMLModel's tokenizer: two of the tiny
// tokenizer's reserved special tokens, renamed.
const (
	IMStart int32 = 502
	IMEnd   int32 = 503
	// EndOfText is <|end_of_text|>, a base model's end of sequence.
	EndOfText int32 = 501
)

// ChatMLModel writes a chat model in a new temporary folder,
// tiny-qwen3-chat, and returns it: tiny-qwen3-f32's weights with Qwen3's ChatML chat template (the one
// that reads enable_thinking, from testdata/qwen3-tokenizer) and the tiny
// tokenizer, whose reserved special tokens 502 and 503 are renamed
// <|im_start|> and <|im_end|>. eos is the model's end of sequence
// (config.json, generation_config.json and tokenizer_config.json's
// eos_token): IMEnd as in Qwen3's instruct models, or EndOfText as in a
// base model that ships the chat template, whose eos is not the
// template's end of turn.
func ChatMLModel(t testing.TB, eos int32) string {
	t.Helper()
	src, dir := ModelDir("tiny-qwen3-f32"), filepath.Join(t.TempDir(), "tiny-qwen3-chat")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	read := func(path string) []byte {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(path, ".gz") {
			z, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if data, err = io.ReadAll(z); err != nil {
				t.Fatal(err)
			}
		}
		return data
	}
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rename := strings.NewReplacer("<|reserved_special_token_0|>", "<|im_start|>", "<|reserved_special_token_1|>", "<|im_end|>")
	eosText := map[int32]string{IMEnd: "<|im_end|>", EndOfText: "<|end_of_text|>"}[eos]
	if eosText == "" {
		t.Fatalf("ChatMLModel: eos %d is neither IMEnd nor EndOfText", eos)
	}
	for _, name := range []string{"config.json", "generation_config.json"} {
		data := string(read(filepath.Join(src, name)))
		if !strings.Contains(data, `"eos_token_id": 509`) {
			t.Fatalf("%s/%s: no eos_token_id 509 to replace", src, name)
		}
		write(name, []byte(strings.ReplaceAll(data, `"eos_token_id": 509`, `"eos_token_id": `+strconv.Itoa(int(eos)))))
	}
	write("tokenizer.json", []byte(rename.Replace(string(read(filepath.Join(src, "tokenizer.json"))))))

	var qwen struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(read(filepath.Join(Dir(), "..", "qwen3-tokenizer", "tokenizer_config.json.gz")), &qwen); err != nil || qwen.ChatTemplate == "" {
		t.Fatalf("Qwen3's chat template: %v", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(rename.Replace(string(read(filepath.Join(src, "tokenizer_config.json"))))), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"], cfg["eos_token"], cfg["bos_token"] = qwen.ChatTemplate, eosText, nil
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	write("tokenizer_config.json", data)

	weights, err := filepath.Abs(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(weights, filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	return dir
}
