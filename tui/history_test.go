package tui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHistory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state", "history")
	h, err := loadHistory(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"first", "two\nlines", "two\nlines", "third"} {
		if err := h.add(s); err != nil {
			t.Fatal(err)
		}
	}
	// Browsing keeps the draft.
	var seen []string
	for {
		s, ok := h.prev("draft")
		if !ok {
			break
		}
		seen = append(seen, s)
	}
	if strings.Join(seen, "|") != "third|two\nlines|first" {
		t.Errorf("older inputs %q (a repeat is kept once)", seen)
	}
	for range 3 {
		h.next()
	}
	if s, ok := h.next(); s != "" || ok {
		t.Errorf("past the newest: %q, %v", s, ok)
	}
	h.prev("draft")
	if s, _ := h.next(); s != "draft" {
		t.Errorf("back to the draft: %q", s)
	}

	// The file keeps multi-line inputs.
	again, err := loadHistory(file)
	if err != nil || strings.Join(again.entries, "|") != "first|two\nlines|third" {
		t.Errorf("reloaded %q, %v", again.entries, err)
	}
}

// TestHistoryCompacts: a file past twice the limit is cut back to the
// limit when read.
func TestHistoryCompacts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "history")
	var b strings.Builder
	for i := range 2*historyLimit + 5 {
		line, _ := json.Marshal(strings.Repeat("x", i%7+1))
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := loadHistory(file)
	if err != nil || len(h.entries) != historyLimit {
		t.Fatalf("%d entries, %v", len(h.entries), err)
	}
	data, _ := os.ReadFile(file)
	if n := strings.Count(string(data), "\n"); n != historyLimit {
		t.Errorf("file has %d lines after compaction, want %d", n, historyLimit)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the rewritten history is readable by others: %v %v", fi.Mode(), err)
	}
}

// TestNoHistory: without a file nothing is written.
func TestNoHistory(t *testing.T) {
	h, _ := loadHistory("")
	if err := h.add("secret"); err != nil {
		t.Fatal(err)
	}
	if s, ok := h.prev(""); !ok || s != "secret" {
		t.Errorf("in-memory history: %q", s)
	}
}
